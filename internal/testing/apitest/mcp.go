//lint:file-ignore SA1019 roots and logging are what the MCP endpoint passes between its clients and children of the handshake era; the 2026-07-28 revision deprecates them with a twelve-month window.

package apitest

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/wire"
)

// Bearer is an MCP client's HTTP transport to a Daemon's TCP listener:
// every request carries Token as its bearer token, and Session, if set,
// as its Mcpx-Session header; nothing else (an MCP client sends no
// Mcpx-Client header).
type Bearer struct{ Token, Session string }

func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	if b.Session != "" {
		r.Header.Set(wire.HeaderSession, b.Session)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// ConnectMCP connects a go-sdk client to path on d's TCP listener as the
// owner (Token), with roots (none if empty) and opts; version "" =
// go-sdk's default, which in v1.8.0 is the stateless 2026-07-28 revision
// (say "2025-11-25" for the handshake era). The session closes at cleanup.
func (d *Daemon) ConnectMCP(t testing.TB, path, version string, opts *mcp.ClientOptions, roots ...string) (*mcp.Client, *mcp.ClientSession) {
	t.Helper()
	return d.ConnectMCPAs(t, Bearer{Token: Token}, path, version, opts, roots...)
}

// ConnectMCPAs is ConnectMCP over rt, which says who calls.
func (d *Daemon) ConnectMCPAs(t testing.TB, rt http.RoundTripper, path, version string, opts *mcp.ClientOptions, roots ...string) (*mcp.Client, *mcp.ClientSession) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, opts)
	for _, r := range roots {
		c.AddRoots(&mcp.Root{URI: "file://" + r, Name: filepath.Base(r)})
	}
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + d.TCPAddr + path, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s (%q): %v", path, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return c, cs
}

// CallText calls a tool that must succeed and returns its text content.
func CallText(t testing.TB, cs *mcp.ClientSession, p *mcp.CallToolParams) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %+v", res.Content)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// RawMCP is a 2025-11-25 session of the owner's on /mcp, spoken by hand.
type RawMCP struct {
	t testing.TB
	// URL is where Send sends (d's /mcp; another path of d's is allowed).
	URL string
	// SessionID is the session's Mcp-Session-Id.
	SessionID string
}

// RawMCP opens a session on d's /mcp: initialize, then initialized.
func (d *Daemon) RawMCP(t testing.TB) *RawMCP {
	t.Helper()
	m := &RawMCP{t: t, URL: "http://" + d.TCPAddr + "/mcp"}
	resp := m.Send(t.Context(), "POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, "")
	resp.Body.Close()
	m.SessionID = resp.Header.Get("Mcp-Session-Id")
	if m.SessionID == "" {
		t.Fatalf("initialize: status %d, no session id", resp.StatusCode)
	}
	m.Send(t.Context(), "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "").Body.Close()
	return m
}

// Send sends one request of the session (body "" = none; lastID, if set,
// is its Last-Event-ID) and returns the response, whose body the caller
// closes.
func (m *RawMCP) Send(ctx context.Context, method, body, lastID string) *http.Response {
	m.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, m.URL, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+Token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if m.SessionID != "" {
		req.Header.Set("Mcp-Session-Id", m.SessionID)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	return resp
}

// Updates collects a go-sdk client's resource updates and the child's log
// lines that reach it (Options are its handlers).
type Updates struct {
	mu   sync.Mutex
	uris []string // guarded by mu
	logs []string // guarded by mu
	ch   chan string
}

// NewUpdates returns an empty collector.
func NewUpdates() *Updates { return &Updates{ch: make(chan string, 100)} }

// Options are a client's handlers that feed u.
func (u *Updates) Options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			u.mu.Lock()
			u.uris = append(u.uris, r.Params.URI)
			u.mu.Unlock()
			select {
			case u.ch <- r.Params.URI:
			default:
			}
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			s, _ := r.Params.Data.(string)
			u.mu.Lock()
			u.logs = append(u.logs, s)
			u.mu.Unlock()
		},
	}
}

// Count is how many updates of uri, and child log lines containing text, came.
func (u *Updates) Count(uri, text string) (n, logs int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, x := range u.uris {
		if x == uri {
			n++
		}
	}
	for _, l := range u.logs {
		if text != "" && strings.Contains(l, text) {
			logs++
		}
	}
	return n, logs
}

// Next waits for the client's next update (at most 30 s).
func (u *Updates) Next(t testing.TB) string {
	t.Helper()
	select {
	case uri := <-u.ch:
		return uri
	case <-time.After(30 * time.Second):
		t.Fatal("no resource update within 30s")
		return ""
	}
}
