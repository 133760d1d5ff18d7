package daemon_test

import (
	"net"
	"path/filepath"
	"testing"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/daemon"
)

// TestLoopbackPortOutlivesARestart: a port-0 loopback listener gets the
// port the last daemon of its state directory had, so that a client entry
// written with that address still reaches the next daemon; another port
// when that one is taken; and a fixed port is a fixed port.
func TestLoopbackPortOutlivesARestart(t *testing.T) {
	state := t.TempDir()
	sock := filepath.Join(t.TempDir(), "s")
	open := func() (*daemon.Listeners, net.Listener) {
		t.Helper()
		lns := &daemon.Listeners{State: state}
		tln, err := lns.Local(sock, "127.0.0.1:0", api.ServeOptions{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		return lns, tln
	}
	lns, tln := open()
	first := tln.Addr().String()
	lns.Close()
	lns, tln = open()
	if got := tln.Addr().String(); got != first {
		t.Errorf("after a restart the daemon listens on %s; want %s, the last one's", got, first)
	}
	lns.Close()

	// Taken by something else: another port, remembered in turn.
	squat, err := net.Listen("tcp", first)
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	lns, tln = open()
	second := tln.Addr().String()
	if second == first {
		t.Fatalf("listening on %s, which another listener holds", second)
	}
	lns.Close()
	lns, tln = open()
	if got := tln.Addr().String(); got != second {
		t.Errorf("after the second restart: %s; want %s", got, second)
	}
	lns.Close()
}
