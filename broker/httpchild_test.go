package broker_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
)

// urlBroker serves one url server, "remote", at url with headers (nil =
// none). The caller closes it, before the test server: an open session
// keeps httptest.Server.Close waiting.
func urlBroker(t *testing.T, url string, headers map[string]string) *broker.Broker {
	t.Helper()
	server := map[string]any{"url": url}
	if headers != nil {
		server["headers"] = headers
	}
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"remote": server}})
	cfg, err := config.Parse(doc, "http.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Options{Config: cfg, ReapInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A url server is a streamable-HTTP child: same calls, no process, and a
// session the server forgets is re-initialized without the caller noticing.
func TestStreamableHTTPChild(t *testing.T) {
	var sessions atomic.Int32
	newHandler := func() http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
			sessions.Add(1)
			return demo.NewServer()
		}, nil)
	}
	var current atomic.Pointer[http.Handler]
	h := newHandler()
	current.Store(&h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*current.Load()).ServeHTTP(w, r)
	}))
	defer srv.Close()

	b := urlBroker(t, srv.URL, map[string]string{"X-Test": "1"})
	defer b.Close(t.Context())

	r := req("remote", "")
	if got := callText(t, b, r, "echo", `{"message":"over http"}`); got != "over http" {
		t.Errorf("echo = %q", got)
	}
	tools, err := b.Tools(t.Context(), r)
	if err != nil || !strings.Contains(string(tools), `"name":"echo"`) {
		t.Errorf("tools = %.200s, %v", tools, err)
	}
	var progress int
	if _, err := b.CallTool(t.Context(), r, "progress", json.RawMessage(`{"steps":2}`), func(json.RawMessage) { progress++ }); err != nil || progress != 2 {
		t.Errorf("progress over http: %d notifications, %v", progress, err)
	}
	in := b.Instances()
	if len(in) != 1 || in[0].Transport != "http" || in[0].Pid != 0 || in[0].Key != "global" {
		t.Errorf("instances %+v, want one global http instance without a pid", in)
	}
	if got := callText(t, b, r, "roots", `{}`); got != "[]" {
		t.Errorf("roots of a global url instance = %s, want []", got)
	}

	// The server restarts and forgets our session (404): the next call
	// re-initializes and succeeds.
	before := sessions.Load()
	h2 := newHandler()
	current.Store(&h2)
	if res, err := b.CallTool(t.Context(), r, "echo", json.RawMessage(`{"message":"after expiry"}`), nil); err != nil {
		var be *broker.Error
		errors.As(err, &be)
		t.Fatalf("echo after the session expired: %v (cause %v)", err, be.Err)
	} else if got := text(t, res); got != "after expiry" {
		t.Errorf("echo after the session expired = %q", got)
	}
	if sessions.Load() == before {
		t.Error("no new session was initialized after the old one expired")
	}
}

func TestURLServerTransportFailureIsChildFailed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream on fire", http.StatusBadGateway)
	}))
	defer srv.Close()
	b := urlBroker(t, srv.URL, nil)
	defer b.Close(t.Context())
	_, err := b.CallTool(t.Context(), req("remote", ""), "echo", nil, nil)
	if k := broker.KindOf(err); k != broker.KindChildFailed {
		t.Fatalf("err = %v (kind %s), want child-failed", err, k)
	}
	var be *broker.Error
	errors.As(err, &be)
	if strings.Contains(be.Msg, srv.URL) || strings.Contains(be.Msg, "on fire") {
		t.Errorf("the message any caller may read names the internal URL or answer: %q", be.Msg)
	}
	if !strings.Contains(be.Private, "502") {
		t.Errorf("the daemon's owner is not told what happened: %q", be.Private)
	}
}

// A url server of the 2026-07-28 era (the go-sdk's stateless handler) is
// spoken to in it: status shows the version, and calls, progress and the
// tool list work as with a handshake-era one.
func TestStreamableHTTPChildStateless(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	defer srv.Close()
	b := urlBroker(t, srv.URL, nil)
	defer b.Close(t.Context())

	r := req("remote", "")
	if got := callText(t, b, r, "echo", `{"message":"stateless"}`); got != "stateless" {
		t.Errorf("echo = %q", got)
	}
	var progress int
	if _, err := b.CallTool(t.Context(), r, "progress", json.RawMessage(`{"steps":2}`), func(json.RawMessage) { progress++ }); err != nil || progress != 2 {
		t.Errorf("progress: %d notifications, %v", progress, err)
	}
	if tools, err := b.Tools(t.Context(), r); err != nil || !strings.Contains(string(tools), `"name":"echo"`) {
		t.Errorf("tools = %.200s, %v", tools, err)
	}
	if in := b.Instances(); len(in) != 1 || in[0].Transport != "http" || in[0].Protocol != "2026-07-28" {
		t.Errorf("instances %+v, want one http instance speaking 2026-07-28", in)
	}
}
