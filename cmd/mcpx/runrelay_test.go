package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/api/client"
	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/proctest"
	"mcpx.dev/mcpx/internal/testenv"
)

// TestRunRelay: mcpx run's relay to a remote broker takes only its own
// token, sends requests on with the CLI's client, maps the script's
// directory (and those below it, and the client config's mappings) to the
// broker's side and refuses one nothing maps, passes error answers
// through, and streams a call's events as they come. The broker here is a
// local daemon on a unix socket: the relay does not care where its
// client's daemon is.
func TestRunRelay(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	local, remote, mappedLocal, mappedRemote := filepath.Join(dir, "laptop", "app"), filepath.Join(dir, "broker", "app"),
		filepath.Join(dir, "laptop", "other"), filepath.Join(dir, "broker", "other")
	for _, d := range []string{filepath.Join(local, "sub"), filepath.Join(remote, "sub"), mappedLocal, mappedRemote, filepath.Join(dir, "elsewhere")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sock := serveDemo(t, dir, "cwd")

	relay, err := startRunRelay(client.New(sock, client.Options{}), local, remote, map[string]string{mappedLocal: mappedRemote}, "client.json")
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()

	post := func(path, token, cwd, accept, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", relay.URL()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(wire.HeaderAuthorization, "Bearer "+token)
		req.Header.Set(wire.HeaderClient, "mcpx-test")
		if cwd != "" {
			req.Header.Set(wire.HeaderCwd, cwd)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	text := func(body string) string {
		var res struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal([]byte(body), &res) != nil || len(res.Content) == 0 {
			return ""
		}
		return res.Content[0].Text
	}
	real := func(p string) string { r, _ := filepath.EvalSymlinks(p); return r }

	for _, tc := range []struct{ cwd, want string }{
		{"", remote}, // none: the run's
		{local, remote},
		{filepath.Join(local, "sub"), filepath.Join(remote, "sub")},
		{mappedLocal, mappedRemote},
	} {
		resp, body := post("/v1/servers/demo/tools/cwd", relay.token, tc.cwd, "", "{}")
		if resp.StatusCode != 200 || text(body) != real(tc.want) {
			t.Errorf("cwd %s through the relay: %d %s, want the child in %s", tc.cwd, resp.StatusCode, body, tc.want)
		}
	}

	resp, body := post("/v1/servers/demo/tools/cwd", "not-the-token", local, "", "{}")
	if resp.StatusCode != 401 || !strings.Contains(body, wire.KindUnauthorized) {
		t.Errorf("a wrong token: %d %s, want 401", resp.StatusCode, body)
	}
	elsewhere := filepath.Join(dir, "elsewhere")
	resp, body = post("/v1/servers/demo/tools/cwd", relay.token, elsewhere, "", "{}")
	if resp.StatusCode != 400 || !strings.Contains(body, "no path mapping covers "+real(elsewhere)) || !strings.Contains(body, "client.json") {
		t.Errorf("an unmapped cwd: %d %s, want 400 naming it and the client config", resp.StatusCode, body)
	}
	resp, body = post("/v1/servers/nope/tools/cwd", relay.token, local, "", "{}")
	if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), wire.MediaProblem) || !strings.Contains(body, `"nope"`) {
		t.Errorf("an unknown server: %d %s, want the broker's 404 problem passed through", resp.StatusCode, body)
	}
	resp, body = post("/v1/servers/demo/tools/progress", relay.token, local, wire.MediaEventStream, `{"steps":3}`)
	if resp.StatusCode != 200 || strings.Count(body, "event: progress") != 3 || !strings.Contains(body, "event: result") || !strings.Contains(body, "done 3") {
		t.Errorf("a streamed call: %d %s", resp.StatusCode, body)
	}
}

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

// BenchmarkRunRelay: a warm tool call as a script on a remote broker makes
// it, through mcpx run's relay (a loopback HTTP hop, then the CLI's
// client), against the same call straight from the Go client. The broker
// is local here, so the ratio is the relay's own cost.
func BenchmarkRunRelay(b *testing.B) {
	proctest.CheckNoLeaks(b)
	dir := b.TempDir()
	sock := serveDemo(b, dir, "global")
	bc := client.New(sock, client.Options{})
	relay, err := startRunRelay(bc, dir, dir, nil, "client.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(relay.Close)
	args := json.RawMessage(`{"message":"hi"}`)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := bc.CallTool(b.Context(), client.Caller{Cwd: dir}, "demo", "echo", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("relay", func(b *testing.B) {
		hc := &http.Client{}
		for b.Loop() {
			req, _ := http.NewRequest("POST", relay.URL()+"/v1/servers/demo/tools/echo", strings.NewReader(string(args)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(wire.HeaderAuthorization, "Bearer "+relay.token)
			req.Header.Set(wire.HeaderCwd, dir)
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
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
