package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/tsnet"
)

// TestNodeServeOptionsCheckTheHost (real-use 24): the options every
// listener of the node is served with (HTTP on :80 and HTTPS on :443 alike) refuse
// a Host that does not name the node (DNS rebinding), even on /healthz,
// which needs no identity.
func TestNodeServeOptionsCheckTheHost(t *testing.T) {
	b, err := broker.New(broker.Options{Config: &config.Config{Servers: map[string]*config.Server{}}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &tsnet.Node{Hostname: "broker", Dir: t.TempDir()}
	so := nodeServeOptions(n, api.ServeOptions{DrainTimeout: time.Second})
	if so.Identify == nil || so.Host == nil {
		t.Fatalf("nodeServeOptions left Identify or Host unset: %+v", so)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := api.Serve(ctx, ln, api.New(api.Options{Broker: b, Version: "test"}), so); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait(); b.Close(context.Background()) })
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+ln.Addr().String()+"/healthz", nil)
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /healthz with Host evil.example: %d, want 403", resp.StatusCode)
	}
}
