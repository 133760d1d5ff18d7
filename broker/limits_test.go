package broker_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
)

// vmRSS returns this process's resident set size from /proc, or "?".
func vmRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// An answer over limits.maxMessageBytes fails its call with a 502 naming
// the limit and the key to raise; the line had not ended when it crossed
// the limit, so the child is replaced, and that is no crash: the server
// does not go into crash-loop backoff however often it happens.
func TestFaultOversizedLineThroughBroker(t *testing.T) {
	const limit = 1 << 20
	b := startDemoBroker(t, demoSetup{
		scopes: map[string]config.ScopeKind{"demo": config.ScopeGlobal},
		config: func(c *config.Config) { c.Limits.MaxMessageBytes = limit },
	})
	r := req("demo", "")
	pid := callText(t, b, r, "pid", `{}`)
	for range 3 {
		_, err := b.CallTool(t.Context(), r, "big", json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, 2*limit)), nil)
		var be *broker.Error
		if !errors.As(err, &be) || be.Kind != broker.KindChildFailed {
			t.Fatalf("big over the limit: %v, want child-failed (502)", err)
		}
		if !strings.Contains(be.Msg, fmt.Sprint(limit)) || !strings.Contains(err.Error(), "limits.maxMessageBytes") {
			t.Errorf("error %q does not name the limit and the key to raise", err)
		}
	}
	if got := callText(t, b, r, "echo", `{"message":"still here"}`); got != "still here" {
		t.Errorf("echo after oversized answers = %q", got)
	}
	if got := callText(t, b, r, "pid", `{}`); got == pid {
		t.Errorf("the child was kept (pid %s); want it replaced", pid)
	}
	if s := b.Stats(); s.Crashes != 0 {
		t.Errorf("stats = %+v, want no crash counted", s)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("after 3 answers of %d MiB over a %d MiB limit: live heap %.1f MiB, RSS %s", 2*limit>>20, limit>>20, float64(ms.HeapAlloc)/(1<<20), vmRSS())
}

// A url server that fails with an HTTP status after initialize: the error
// names the status; the daemon's own user also gets the URL and the body;
// 401 says the server needs credentials. The server is configured with an
// Authorization header of its own, so mcpx does not sign in to it (a 401
// from a server it may sign in to: TestURLServer401NeedsSignIn).
func TestURLServerHTTPErrorAfterInitialize(t *testing.T) {
	var status atomic.Int32
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := int(status.Load()); code != 0 && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"tools/call"`) {
				http.Error(w, "secret-ish detail: token expired", code)
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	b := urlBroker(t, srv.URL, map[string]string{"Authorization": "Bearer static"})
	defer b.Close(t.Context())
	r := req("remote", "")
	if got := callText(t, b, r, "echo", `{"message":"ok"}`); got != "ok" {
		t.Fatalf("echo = %q", got)
	}
	for _, c := range []struct {
		code int
		hint string
	}{
		{401, `needs credentials: set them in the server's "headers"`},
		{403, `"headers"`},
		{500, "url server failed"},
		{503, "url server failed"},
	} {
		status.Store(int32(c.code))
		_, err := b.CallTool(t.Context(), r, "echo", json.RawMessage(`{"message":"x"}`), nil)
		var be *broker.Error
		if !errors.As(err, &be) || be.Kind != broker.KindChildFailed {
			t.Fatalf("HTTP %d: %v, want child-failed", c.code, err)
		}
		if !strings.Contains(be.Msg, fmt.Sprint(c.code)) || strings.Contains(be.Msg, srv.URL) || strings.Contains(be.Msg, "token expired") {
			t.Errorf("HTTP %d: the message any caller reads is %q; want the status, not the URL or body", c.code, be.Msg)
		}
		if !strings.Contains(be.Private, srv.URL) || !strings.Contains(be.Private, "token expired") || !strings.Contains(be.Private, fmt.Sprint(c.code)) {
			t.Errorf("HTTP %d: the owner's detail is %q; want the status, URL and body", c.code, be.Private)
		}
		if !strings.Contains(be.Hint, c.hint) {
			t.Errorf("HTTP %d: hint %q, want %q", c.code, be.Hint, c.hint)
		}
		if !strings.Contains(err.Error(), srv.URL) {
			t.Errorf("HTTP %d: the logged error %q lacks the URL", c.code, err)
		}
	}
	status.Store(0)
	if got := callText(t, b, r, "echo", `{"message":"back"}`); got != "back" {
		t.Errorf("echo after the errors = %q", got)
	}
}

// TestURLServer401NeedsSignIn: a url server with no Authorization header
// of its own that answers 401 after initialize needs sign-in
// (docs/oauth.md): the call fails with authorization-required naming the
// command, and so does the next one, at once, without reaching the server.
func TestURLServer401NeedsSignIn(t *testing.T) {
	var refuse atomic.Bool
	var posts atomic.Int32
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		if refuse.Load() && r.Method == http.MethodPost {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+"http://"+r.Host+`/.well-known/oauth-protected-resource"`)
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	b := urlBroker(t, srv.URL, nil)
	defer b.Close(t.Context())
	r := req("remote", "")
	if got := callText(t, b, r, "echo", `{"message":"ok"}`); got != "ok" {
		t.Fatalf("echo = %q", got)
	}
	refuse.Store(true)
	for i := range 2 {
		before := posts.Load()
		_, err := b.CallTool(t.Context(), r, "echo", json.RawMessage(`{"message":"x"}`), nil)
		var be *broker.Error
		if !errors.As(err, &be) || be.Kind != broker.KindAuthorizationRequired || !strings.Contains(be.Hint, "mcpx auth login remote") {
			t.Fatalf("call %d after a 401: %v, want authorization-required naming `mcpx auth login remote`", i+1, err)
		}
		if i == 1 && posts.Load() != before {
			t.Errorf("the second call reached the server: it should fail at once")
		}
	}
	st := b.AuthStatuses(local)
	if len(st) != 1 || !st[0].NeedsSignIn || st[0].SignedIn {
		t.Errorf("AuthStatuses = %+v, want remote needing sign-in", st)
	}
}
