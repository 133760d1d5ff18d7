package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestStateDirMode (real-use 18): a state directory open to other users
// (0755, as mkdir makes it) is restricted to its owner, with a warning, as
// the socket is; a new one is made 0700.
func TestStateDirMode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		make   os.FileMode // 0 = missing
		warned bool
	}{{"missing", 0, false}, {"0755", 0o755, true}, {"0700", 0o700, false}, {"0750", 0o750, true}} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			if tc.make != 0 {
				testenv.Mkdir(t, state)
				if err := os.Chmod(state, tc.make); err != nil {
					t.Fatal(err)
				}
			}
			var stderr testenv.SyncBuffer
			d, err := daemon.New(daemon.Options{Config: &config.Config{Servers: map[string]*config.Server{}}, StateDir: state, Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			st, err := os.Stat(state)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode().Perm(); got != 0o700 {
				t.Errorf("state directory mode %04o; want 0700", got)
			}
			if got := strings.Contains(stderr.String(), "restricted it to its owner"); got != tc.warned {
				t.Errorf("warned %v, want %v; stderr:\n%s", got, tc.warned, stderr.String())
			}
		})
	}
}
