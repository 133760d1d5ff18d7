package pool_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/pool"
)

// countingTransport counts the requests it carries and marks them.
type countingTransport struct {
	base http.RoundTripper
	n    *atomic.Int32
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	r = r.Clone(r.Context())
	r.Header.Set("X-Wrapped", "yes")
	return c.base.RoundTrip(r)
}

// TestURLTransportWrapsURLServers: Options.URLTransport carries every
// request of the url server it is asked for (the broker's OAuth client
// sits there), over the pool's own transport; a nil answer leaves a
// server's requests as they were.
func TestURLTransportWrapsURLServers(t *testing.T) {
	var unwrapped atomic.Int32
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Wrapped") == "" {
			unwrapped.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the pool's own cleanup closes its sessions (cleanups run last first)
	var n atomic.Int32
	var mu sync.Mutex
	var asked []string
	p := newPool(t, pool.Options{URLTransport: func(server string, base http.RoundTripper) http.RoundTripper {
		mu.Lock()
		asked = append(asked, server)
		mu.Unlock()
		if server != "wrapped" {
			return nil
		}
		if base == nil {
			base = http.DefaultTransport
		}
		return countingTransport{base: base, n: &n}
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
	mu.Lock()
	defer mu.Unlock()
	if len(asked) < 2 {
		t.Errorf("URLTransport was asked for %v, want both servers", asked)
	}
}
