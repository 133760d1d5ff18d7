package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/api/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/proctest"
	"mcpx.dev/mcpx/internal/testenv"
)

// serveDemo runs `mcpx serve` in this process with the demo server (this
// test binary) at scope, on a socket in dir, until the test's end, and
// returns the socket once it answers.
func serveDemo(tb testing.TB, dir, scope string) string {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"servers": map[string]any{"demo": map[string]any{
		"command": exe, "scope": scope,
		"env": map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(tb)},
	}}})
	cfgPath, sock := filepath.Join(dir, "config.json"), filepath.Join(dir, "mcpx.sock")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		tb.Fatal(err)
	}
	ctx, stopDaemon := context.WithCancel(context.Background())
	served := make(chan int, 1)
	var logs testenv.SyncBuffer
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", filepath.Join(dir, "state"), "--listen", "off"},
			strings.NewReader(""), &testenv.SyncBuffer{}, &logs)
	}()
	tb.Cleanup(func() {
		stopDaemon()
		if code := <-served; code != exitOK {
			tb.Errorf("serve exited %d:\n%s", code, logs.String())
		}
	})
	testenv.WaitFor(tb, "the socket to answer", func() bool { return client.Answers(sock) })
	return sock
}

// TestRunClientCache: mcpx run keeps the generated client as
// client-<ETag>.ts and asks for it with If-None-Match: an unchanged module
// is answered 304 and the kept file used as it is (its content here is a
// marker a 200 would have overwritten); the cache keeps the keepClients
// most recently used modules and nothing else of its own.
func TestRunClientCache(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	sock := serveDemo(t, dir, "global")
	cache := filepath.Join(dir, "cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	r := &scriptRun{c: &cli{}, bc: client.New(sock, client.Options{}), caller: client.Caller{Cwd: dir}}
	first, err := r.client(t.Context(), cache)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(first)
	if err != nil || !strings.Contains(string(src), "export const demo = {") || !validTag(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(first), "client-"), ".ts")) {
		t.Fatalf("the first fetch wrote %s: %.200s, %v", first, src, err)
	}
	if err := os.WriteFile(first, []byte("// kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := r.client(t.Context(), cache)
	if b, _ := os.ReadFile(again); err != nil || again != first || string(b) != "// kept\n" {
		t.Errorf("the second fetch: %s, %v, holding %.100q; want the kept %s, answered 304", again, err, b, first)
	}

	// Older modules beyond keepClients are pruned, the newest kept.
	old := time.Now().Add(-time.Hour)
	var stale []string
	for i := range keepClients + 2 {
		p := filepath.Join(cache, fmt.Sprintf("client-%032x.ts", i))
		if err := os.WriteFile(p, []byte("// old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old.Add(time.Duration(i)*time.Minute), old.Add(time.Duration(i)*time.Minute))
		stale = append(stale, p)
	}
	os.Remove(first) // the broker's module is new to the cache again: a 200
	path, err := r.client(t.Context(), cache)
	if err != nil || path != first {
		t.Fatalf("fetch after the cache filled: %s, %v", path, err)
	}
	left := keptClients(cache)
	if len(left) != keepClients || left[0].path != first || left[1].path != stale[len(stale)-1] {
		t.Errorf("the cache keeps %v, want %d modules: the new one first, then the newest old ones", left, keepClients)
	}
}
