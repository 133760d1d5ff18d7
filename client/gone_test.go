package client_test

import (
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/client"
)

// TestGoneMidCall: a daemon that dies with a call in flight (its
// connection closed before an answer) is a *GoneError saying so, not a
// bare EOF.
func TestGoneMidCall(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // as the kernel does for a SIGKILLed daemon
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	_, err = client.New(sock, client.Options{}).CallTool(t.Context(), client.Caller{}, "demo", "sleep", nil, nil)
	var gone *client.GoneError
	if !errors.As(err, &gone) || !strings.Contains(err.Error(), "stopped or died") {
		t.Fatalf("error %v (%T), want a *client.GoneError", err, err)
	}
}
