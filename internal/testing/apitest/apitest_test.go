package apitest_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
)

func TestMain(m *testing.M) {
	demo.MaybeServe() // in a child: serve the demo server on stdio and exit
	os.Exit(m.Run())
}

// TestStartDemo: the package doc's example, over both listeners; TCP
// takes Token and nothing else; Shutdown may come before the cleanup.
func TestStartDemo(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	for _, c := range []*apitest.Client{d.Unix, d.TCP} {
		if got := c.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`).Result(t).Text(); got != "hi" {
			t.Errorf("%s: echo = %q", c.Base, got)
		}
	}
	_, cs := d.ConnectMCP(t, "/mcp/demo", "", nil)
	if got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); got != "hi" {
		t.Errorf("MCP: echo = %q", got)
	}
	if d.InFlight() != 0 || len(d.Broker.Instances()) != 1 {
		t.Errorf("%d calls in flight on %d instances, want 0 on 1", d.InFlight(), len(d.Broker.Instances()))
	}
	r := d.TCP.Do(t, "GET", "/v1/servers", "", "Authorization", "Bearer not-the-token")
	if p := r.Problem(t); p.Status != http.StatusUnauthorized {
		t.Errorf("another token over TCP: %+v, want 401", p)
	}
	d.Shutdown()
}

// TestHooks: each part's options reach it, and Handler makes the handler.
func TestHooks(t *testing.T) {
	var made bool
	d := apitest.Start(t, apitest.Options{
		API: func(o *api.Options) { o.Version = "hooked" },
		Handler: func(o api.Options) http.Handler {
			made = true
			return api.New(o)
		},
	})
	if !made {
		t.Error("Options.Handler was not called")
	}
	var h struct{ Version string }
	d.Unix.Do(t, "GET", "/healthz", "").Decode(t, &h)
	if h.Version != "hooked" {
		t.Errorf("/healthz version %q, want the API hook's", h.Version)
	}
}
