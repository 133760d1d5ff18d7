package mcp_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// Through /mcp/urls: a client that declares URL mode is asked and gets its
// completion; another session of the same instance never gets it; a client
// without URL mode is declined for it by mcpx.
func TestURLElicitationCompleteMCP(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.URLServerConfig(t)})
	type client struct {
		mu       sync.Mutex
		asked    []string // URLs
		complete []string // elicitationIds
	}
	connect := func(url bool) (*client, *mcp.ClientSession) {
		cl := &client{}
		caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
		if url {
			caps.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
		_, cs := d.ConnectMCP(t, "/mcp/urls", "2025-11-25", &mcp.ClientOptions{
			Capabilities: caps,
			ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				cl.mu.Lock()
				cl.asked = append(cl.asked, r.Params.URL)
				cl.mu.Unlock()
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
			ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
				cl.mu.Lock()
				cl.complete = append(cl.complete, r.Params.ElicitationID)
				cl.mu.Unlock()
			},
		}, t.TempDir())
		return cl, cs
	}
	a, as := connect(true)
	b, bs := connect(true)
	formOnly, fs := connect(false)
	// Each session uses the instance, so its notices reach them all.
	if got := apitest.CallText(t, fs, &mcp.CallToolParams{Name: "open-url", Arguments: map[string]any{"url": "https://example.com/f", "id": "f-1"}}); got != "decline" {
		t.Errorf("a form-only client: %q, want decline", got)
	}
	if got := apitest.CallText(t, as, &mcp.CallToolParams{Name: "open-url", Arguments: map[string]any{"url": "https://example.com/a", "id": "a-1"}}); got != "accept" {
		t.Errorf("client a: %q, want accept", got)
	}
	testenv.WaitFor(t, "a's completion", func() bool { a.mu.Lock(); defer a.mu.Unlock(); return len(a.complete) == 1 })
	// b's own completion comes after a's would have, on the same stream.
	if got := apitest.CallText(t, bs, &mcp.CallToolParams{Name: "open-url", Arguments: map[string]any{"url": "https://example.com/b", "id": "b-1"}}); got != "accept" {
		t.Errorf("client b: %q, want accept", got)
	}
	testenv.WaitFor(t, "b's completion", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.complete) > 0 })
	for _, c := range []struct {
		name                    string
		cl                      *client
		wantAsked, wantComplete []string
	}{
		{"a", a, []string{"https://example.com/a"}, []string{"a-1"}},
		{"b", b, []string{"https://example.com/b"}, []string{"b-1"}},
		{"form-only", formOnly, nil, nil},
	} {
		c.cl.mu.Lock()
		if !slices.Equal(c.cl.asked, c.wantAsked) || !slices.Equal(c.cl.complete, c.wantComplete) {
			t.Errorf("client %s: asked %v, completions %v; want %v, %v", c.name, c.cl.asked, c.cl.complete, c.wantAsked, c.wantComplete)
		}
		c.cl.mu.Unlock()
	}
}
