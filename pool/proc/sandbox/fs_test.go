//go:build linux

package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
)

// TestReadOutside: a confined child reads its own root, but neither
// another worktree nor a key in a home directory; unconfined it reads all.
func TestReadOutside(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	ops := []op{{"read", f.inRoot}, {"read", f.other}, {"read", f.sshKey}}
	t.Run("off", func(t *testing.T) {
		r := runPlain(t, ops...)
		for _, o := range ops {
			if res := r.get(t, o.Do+o.Arg); res.Err != "" {
				t.Errorf("unconfined read %s: %s", o.Arg, res.Err)
			}
		}
	})
	t.Run("on", func(t *testing.T) {
		requireKernel(t, 1, false)
		r := runConfined(t, f.policy, ops...)
		if res := r.get(t, "read"+f.inRoot); res.Err != "" {
			t.Errorf("confined read of its own root: %s", res.Err)
		}
		for _, path := range []string{f.other, f.sshKey} {
			res := r.get(t, "read"+path)
			if !strings.Contains(res.Err, syscall.EACCES.Error()) {
				t.Errorf("confined read %s: err %q, out %q; want permission denied", path, res.Err, res.Out)
			}
		}
	})
}

// TestWriteOutside: a confined child writes in its root and its private
// tmp, but not in the root's parent nor in /tmp; unconfined it writes
// everywhere.
func TestWriteOutside(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	outside := []string{
		filepath.Join(f.dir, "escaped"),                                           // the root's parent
		filepath.Join(os.TempDir(), "mcpx-sandbox-escaped-"+filepath.Base(f.dir)), // /tmp outside its own
	}
	inside := []string{filepath.Join(f.root, "written"), filepath.Join(f.tmp, "written")}
	var ops []op
	for _, p := range append(inside, outside...) {
		ops = append(ops, op{"write", p})
	}
	t.Cleanup(func() {
		for _, p := range outside {
			os.Remove(p)
		}
	})
	t.Run("off", func(t *testing.T) {
		r := runPlain(t, ops...)
		for _, p := range outside {
			if res := r.get(t, "write"+p); res.Err != "" {
				t.Errorf("unconfined write %s: %s", p, res.Err)
			}
			os.Remove(p)
		}
	})
	t.Run("on", func(t *testing.T) {
		requireKernel(t, 1, false)
		r := runConfined(t, f.policy, ops...)
		for _, p := range inside {
			if res := r.get(t, "write"+p); res.Err != "" {
				t.Errorf("confined write in its own %s: %s", p, res.Err)
			}
		}
		for _, p := range outside {
			res := r.get(t, "write"+p)
			if !strings.Contains(res.Err, syscall.EACCES.Error()) {
				t.Errorf("confined write %s: err %q; want permission denied", p, res.Err)
			}
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s was written", p)
			}
		}
	})
}
