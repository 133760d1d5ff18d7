package pool_test

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/pool"
)

// countingTransport counts the requests it carries and marks them with
// the account it was made for.
type countingTransport struct {
	base    http.RoundTripper
	n       *atomic.Int32
	account string
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	r = r.Clone(r.Context())
	r.Header.Set("X-Wrapped", "yes")
	r.Header.Set("X-Account", c.account)
	return c.base.RoundTrip(r)
}

// TestURLTransportWrapsURLServers: Options.URLTransport carries every
// request of the url server it is asked for (the broker's OAuth client
// sits there), over the pool's own transport; a nil answer leaves a
// server's requests as they were. Targets of one key and two accounts
// are two instances, each with its own transport and upstream session.
func TestURLTransportWrapsURLServers(t *testing.T) {
	var unwrapped atomic.Int32
	var smu sync.Mutex
	sessions := map[string]map[string]bool{} // by X-Account: the Mcp-Session-Ids it sent
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Wrapped") == "" {
			unwrapped.Add(1)
		}
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			smu.Lock()
			a := r.Header.Get("X-Account")
			if sessions[a] == nil {
				sessions[a] = map[string]bool{}
			}
			sessions[a][id] = true
			smu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the pool's own cleanup closes its sessions (cleanups run last first)
	var n atomic.Int32
	var mu sync.Mutex
	var asked []string
	p := newPool(t, pool.Options{URLTransport: func(server, account string, base http.RoundTripper) http.RoundTripper {
		mu.Lock()
		asked = append(asked, server+"/"+account)
		mu.Unlock()
		if server != "wrapped" {
			return nil
		}
		if base == nil {
			base = http.DefaultTransport
		}
		return countingTransport{base: base, n: &n, account: account}
	}}, pool.Server{Name: "wrapped", URL: srv.URL}, pool.Server{Name: "plain", URL: srv.URL})
	if got := mustCall(t, p, pool.Target{Server: "wrapped", Key: "global"}, "echo", map[string]any{"message": "hi"}); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	if n.Load() == 0 || unwrapped.Load() != 0 {
		t.Errorf("the wrapped server's requests: %d through URLTransport, %d not; want all through it", n.Load(), unwrapped.Load())
	}
	if got := mustCall(t, p, pool.Target{Server: "plain", Key: "global"}, "echo", map[string]any{"message": "hi"}); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	if unwrapped.Load() == 0 {
		t.Error("the plain server's requests went through the wrapper")
	}
	for _, a := range []string{"alice", "bob"} {
		if got := mustCall(t, p, pool.Target{Server: "wrapped", Key: "global", Account: a}, "echo", map[string]any{"message": a}); got != a {
			t.Fatalf("echo as %s = %q", a, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"wrapped/", "plain/", "wrapped/alice", "wrapped/bob"} {
		if !slices.Contains(asked, want) {
			t.Errorf("URLTransport was asked for %v, want %s among them", asked, want)
		}
	}
	smu.Lock()
	defer smu.Unlock()
	if len(sessions["alice"]) != 1 || len(sessions["bob"]) != 1 || maps.Equal(sessions["alice"], sessions["bob"]) {
		t.Errorf("upstream sessions by account: %v; want one each, not shared", sessions)
	}
}
