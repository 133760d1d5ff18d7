package api_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
)

func TestListenUnixIsPrivate(t *testing.T) {
	old := syscall.Umask(0) // the most permissive umask: modes must not depend on it
	t.Cleanup(func() { syscall.Umask(old) })

	dir := filepath.Join(t.TempDir(), "run", "mcpx")
	sock := filepath.Join(dir, "mcpx.sock")
	ln, err := api.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket dir: %v, %v; want 0700", fi.Mode(), err)
	}
	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want socket 0600", fi.Mode())
	}
	ln.Close()
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket left behind after Close: %v", err)
	}
}

func TestListenUnixRefusesLiveSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mcpx.sock")
	ln, err := api.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // answer like a live daemon would
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if ln2, err := api.ListenUnix(sock); !errors.Is(err, api.ErrSocketInUse) {
		if ln2 != nil {
			ln2.Close()
		}
		t.Fatalf("second listen: %v, want ErrSocketInUse", err)
	}
	if _, err := os.Lstat(sock); err != nil {
		t.Errorf("live socket was removed: %v", err)
	}
}

func TestListenUnixReplacesStaleSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mcpx.sock")
	// A socket file nobody listens on, as a killed daemon leaves it.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()

	ln2, err := api.ListenUnix(sock)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln2.Close()
}

func TestListenUnixRefusesNonSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpx.sock")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ln, err := api.ListenUnix(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		if ln != nil {
			ln.Close()
		}
		t.Fatalf("err = %v, want not a socket", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Error("the file was touched")
	}
}

func TestListenLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:0", "nonsense"} {
		if ln, err := api.ListenLoopback(addr); err == nil {
			ln.Close()
			t.Errorf("%s: accepted", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := api.ListenLoopback(addr)
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		ln.Close()
	}
}

func TestServeDrainsThenReturns(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		w.Write([]byte("done"))
	})
	ln, err := api.ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- api.Serve(ctx, ln, h, api.ServeOptions{}) }()

	got := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b := make([]byte, 4)
		n, _ := resp.Body.Read(b)
		got <- string(b[:n])
	}()
	<-started
	cancel()
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v with a request in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("still accepting after shutdown began")
	}
	close(release)
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if s := <-got; s != "done" {
		t.Errorf("in-flight request got %q", s)
	}
}

func TestServeDrainIsBounded(t *testing.T) {
	cancelled := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // only a forced close ends this request
		close(cancelled)
	})
	ln, err := api.ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- api.Serve(ctx, ln, h, api.ServeOptions{DrainTimeout: 100 * time.Millisecond}) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel()
	if err := <-served; err == nil {
		t.Error("Serve: nil error after the drain timed out")
	}
	<-cancelled
}
