package broker_test

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
)

// TestSessionsGetTheirOwnPortsAndDirs: a session-scoped server with a
// port allocation and ${mcpx.tmpdir}, from the config to the child.
func TestSessionsGetTheirOwnPortsAndDirs(t *testing.T) {
	lo := 0
	for range 200 {
		lo = 20000 + rand.IntN(10000)
		if ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(lo)); err == nil {
			ln.Close()
			break
		}
	}
	hi := lo + 7
	state := t.TempDir()
	b := startDemoBroker(t, demoSetup{
		scopes: map[string]config.ScopeKind{"s": config.ScopeSession},
		server: func(s *config.Server) {
			s.Allocate = map[string]*config.Alloc{"port": {Range: []int{lo, hi}}}
			s.Env["PORT"] = "${mcpx.alloc.port}"
			s.Env["TMP"] = "${mcpx.tmpdir}"
		},
		opts: broker.Options{StateDir: state},
	})
	sessions := []string{"a", "b", "c", "d"}
	ports := make([]string, len(sessions))
	dirs := make([]string, len(sessions))
	var wg sync.WaitGroup
	for i, sess := range sessions {
		wg.Go(func() {
			r := req("s", "")
			r.Context.Session = sess
			ports[i] = callText(t, b, r, "env", `{"name":"PORT"}`)
			dirs[i] = callText(t, b, r, "env", `{"name":"TMP"}`)
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(slices.Compact(slices.Sorted(slices.Values(ports)))) != len(sessions) {
		t.Errorf("sessions got ports %v, want 4 distinct", ports)
	}
	for _, p := range ports {
		if n, err := strconv.Atoi(p); err != nil || n < lo || n > hi {
			t.Errorf("port %q is not in [%d, %d]", p, lo, hi)
		}
	}
	realState, _ := filepath.EvalSymlinks(state)
	for _, d := range dirs {
		if !strings.HasPrefix(d, filepath.Join(realState, broker.TmpDir)+string(filepath.Separator)) {
			t.Errorf("tmpdir %q is not under the state directory's %s", d, broker.TmpDir)
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("tmpdir %q: %v", d, err)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(dirs)))) != len(sessions) {
		t.Errorf("sessions got tmpdirs %v, want 4 distinct", dirs)
	}
}
