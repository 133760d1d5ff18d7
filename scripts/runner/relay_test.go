package runner_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/scripts/runner"
	"mcpx.dev/mcpx/wire"
)

// TestRelay: mcpx run's relay to a remote broker takes only its own token,
// sends requests on with the CLI's client, maps the script's directory
// (and those below it, and the client config's mappings) to the broker's
// side and refuses one nothing maps, passes error answers through, and
// streams a call's events as they come. The broker here is a local daemon
// on a unix socket: the relay does not care where its client's daemon is.
// Close stops it and waits for its serving goroutine; a second Close says
// it is closed.
func TestRelay(t *testing.T) {
	dir := t.TempDir()
	local, remote, mappedLocal, mappedRemote := filepath.Join(dir, "laptop", "app"), filepath.Join(dir, "broker", "app"),
		filepath.Join(dir, "laptop", "other"), filepath.Join(dir, "broker", "other")
	for _, d := range []string{filepath.Join(local, "sub"), filepath.Join(remote, "sub"), mappedLocal, mappedRemote, filepath.Join(dir, "elsewhere")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := startBroker(t, "cwd")

	relay, err := runner.StartRelay(d.unix, runner.RelayOptions{Local: local, Remote: remote, Mappings: map[string]string{mappedLocal: mappedRemote}, Config: "client.json"})
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
		resp, body := post("/v1/servers/demo/tools/cwd", relay.Token(), tc.cwd, "", "{}")
		if resp.StatusCode != 200 || text(body) != real(tc.want) {
			t.Errorf("cwd %s through the relay: %d %s, want the child in %s", tc.cwd, resp.StatusCode, body, tc.want)
		}
	}

	resp, body := post("/v1/servers/demo/tools/cwd", "not-the-token", local, "", "{}")
	if resp.StatusCode != 401 || !strings.Contains(body, wire.KindUnauthorized) {
		t.Errorf("a wrong token: %d %s, want 401", resp.StatusCode, body)
	}
	elsewhere := filepath.Join(dir, "elsewhere")
	resp, body = post("/v1/servers/demo/tools/cwd", relay.Token(), elsewhere, "", "{}")
	if resp.StatusCode != 400 || !strings.Contains(body, "no path mapping covers "+real(elsewhere)) || !strings.Contains(body, "client.json") {
		t.Errorf("an unmapped cwd: %d %s, want 400 naming it and the client config", resp.StatusCode, body)
	}
	resp, body = post("/v1/servers/nope/tools/cwd", relay.Token(), local, "", "{}")
	if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), wire.MediaProblem) || !strings.Contains(body, `"nope"`) {
		t.Errorf("an unknown server: %d %s, want the broker's 404 problem passed through", resp.StatusCode, body)
	}
	resp, body = post("/v1/servers/demo/tools/progress", relay.Token(), local, wire.MediaEventStream, `{"steps":3}`)
	if resp.StatusCode != 200 || strings.Count(body, "event: progress") != 3 || !strings.Contains(body, "event: result") || !strings.Contains(body, "done 3") {
		t.Errorf("a streamed call: %d %s", resp.StatusCode, body)
	}

	if err := relay.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := net.Dial("tcp", strings.TrimPrefix(relay.URL(), "http://")); err == nil {
		t.Error("the relay still accepts connections after Close")
	}
	if err := relay.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a second Close: %v, want net.ErrClosed", err)
	}
}

// BenchmarkRelay: a warm tool call as a script on a remote broker makes it,
// through mcpx run's relay (a loopback HTTP hop, then the CLI's client),
// against the same call straight from the Go client. The broker is local
// here, so the ratio is the relay's own cost.
func BenchmarkRelay(b *testing.B) {
	d := startBroker(b, "global")
	dir := b.TempDir()
	relay, err := runner.StartRelay(d.unix, runner.RelayOptions{Local: dir, Remote: dir, Config: "client.json"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { relay.Close() })
	args := json.RawMessage(`{"message":"hi"}`)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.unix.CallTool(b.Context(), client.Caller{Cwd: dir}, "demo", "echo", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("relay", func(b *testing.B) {
		hc := &http.Client{}
		for b.Loop() {
			req, _ := http.NewRequest("POST", relay.URL()+"/v1/servers/demo/tools/echo", strings.NewReader(string(args)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(wire.HeaderAuthorization, "Bearer "+relay.Token())
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
