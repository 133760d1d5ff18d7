package nixresolve_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testenv"
	"mcpx.dev/mcpx/nixresolve"
)

// TestTimeoutKillsGroup: a nix that hangs is killed at nix.timeout, with
// what it forked. The one fake nix of these tests: a real one cannot be
// made to hang on cue offline. It needs no nix installed.
func TestTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "nix")
	script := "#!/bin/sh\necho $$ > " + dir + "/nix.pid\n/bin/sleep 300 &\necho $! > " + dir + "/child.pid\nwait\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := nixresolve.New(nixresolve.Options{CacheDir: t.TempDir(), Binary: fake, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	spec := "nix:github:mcpx-test/slow#x"
	_, err = r.Resolve(t.Context(), spec)
	checkErr(t, err, spec, nixresolve.ErrTimeout, "nix did not finish within 300ms (nix.timeout); it was killed")
	for _, f := range []string{"nix.pid", "child.pid"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		testenv.WaitFor(t, f+" to be killed", func() bool { return !running(pid) })
	}
}

// running reports whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
