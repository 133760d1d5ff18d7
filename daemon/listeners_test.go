package daemon_test

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

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

// TestPublicListenerHasItsOwnHandler: the public face's listener is served
// with its own handler, never the daemon's, and an upgrade does not hand it
// over (HandedOver lists the unix socket and loopback TCP only).
func TestPublicListenerHasItsOwnHandler(t *testing.T) {
	lns := &daemon.Listeners{}
	defer lns.Close()
	if _, err := lns.Local(filepath.Join(t.TempDir(), "s"), "127.0.0.1:0", api.ServeOptions{}, 4); err != nil {
		t.Fatal(err)
	}
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lns.AddPublic(pln, api.ServeOptions{DrainTimeout: time.Second}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "public")
	}))
	private := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "private") })
	var wg sync.WaitGroup
	var stops []func(error)
	for _, a := range lns.Actors(private) {
		wg.Go(func() { a.Execute() })
		stops = append(stops, a.Interrupt)
	}
	defer func() {
		for _, s := range stops {
			s(nil)
		}
		wg.Wait()
	}()
	resp, err := http.Get("http://" + pln.Addr().String() + "/v1/servers")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "public" {
		t.Fatalf("the public listener answered %q, want its own handler's", b)
	}
	for _, hl := range daemon.HandedOver(lns) {
		if hl == pln.Addr().String() {
			t.Fatalf("an upgrade would hand over the public listener %s", hl)
		}
	}
	if n := len(daemon.HandedOver(lns)); n != 2 {
		t.Fatalf("an upgrade would hand over %d listeners, want the unix socket and loopback TCP", n)
	}
}
