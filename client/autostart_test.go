package client_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// TestAutostartPolicy: a command starts the daemon it chose, on that
// daemon's socket and with its state directory and config, unless
// --no-autostart or $MCPX_NO_AUTOSTART says not to; never one on another
// socket (--broker) or at a URL.
func TestAutostartPolicy(t *testing.T) {
	proctest.CheckNoLeaks(t)
	t.Setenv(proctest.MarkerEnv, proctest.Marker(t)) // the started stand-ins carry it
	t.Setenv("HELPER_DAEMON_SERVE", "1")
	for _, tt := range []struct {
		name   string
		addr   string // "" = the chosen daemon's socket
		off    bool
		env    string // $MCPX_NO_AUTOSTART
		config string
		starts bool
	}{
		{name: "the chosen daemon", starts: true},
		{name: "the daemon of a config", config: "/etc/work.json", starts: true},
		{name: "MCPX_NO_AUTOSTART=0", env: "0", starts: true},
		{name: "MCPX_NO_AUTOSTART=false", env: "false", starts: true},
		{name: "--no-autostart", off: true},
		{name: "MCPX_NO_AUTOSTART=1", env: "1"},
		{name: "another socket", addr: "other.sock"},
		{name: "a URL", addr: "http://127.0.0.1:1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			state, sock := filepath.Join(dir, "state"), filepath.Join(dir, "mcpx.sock")
			addr := sock
			if tt.addr != "" && !strings.HasPrefix(tt.addr, "http") {
				addr = filepath.Join(dir, tt.addr)
			} else if tt.addr != "" {
				addr = tt.addr
			}
			o := client.AutostartOptions{Socket: sock, StateDir: state, Config: tt.config, Off: tt.off, Binary: os.Args[0],
				Getenv: func(k string) string {
					if k == "MCPX_NO_AUTOSTART" {
						return tt.env
					}
					return ""
				}}
			pid, err := client.New(addr, client.Options{}).Autostart(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			log, _ := os.ReadFile(filepath.Join(state, wire.LogFile))
			if !tt.starts {
				if pid != 0 || len(log) > 0 || client.Answers(addr) {
					t.Errorf("started a daemon: pid %d, log %q", pid, log)
				}
				return
			}
			if pid == 0 || !client.Answers(sock) {
				t.Fatalf("started no daemon: pid %d, log %q", pid, log)
			}
			defer waitGone(t, pid)
			defer os.Remove(sock) // the stand-in exits
			want := "helper serve: socket=" + sock + " state-dir=" + state + " config=" + tt.config + "\n"
			if !strings.Contains(string(log), want) {
				t.Errorf("the daemon's log %q; want %q", log, want)
			}
			if again, err := client.New(addr, client.Options{}).Autostart(t.Context(), o); again != 0 || err != nil {
				t.Errorf("a second start: pid %d, %v; want none (it serves)", again, err)
			}
		})
	}
}
