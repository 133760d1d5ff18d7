package mcp_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// A session of the endpoint: its end, its idle time, its path.

func TestMCPSessionEndsOnDelete(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "session"}`})
	_, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", nil)
	apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__pid"})
	if n := len(d.Broker.Instances()); n != 1 || d.MCP.Sessions() != 1 {
		t.Fatalf("%d instances, %d sessions; want 1, 1", n, d.MCP.Sessions())
	}
	cs.Close()
	testenv.WaitFor(t, "the session and its child to end", func() bool { return d.MCP.Sessions() == 0 && len(d.Broker.Instances()) == 0 })
}

// TestMCPIdleSessionEnds: a client that stops calling loses its session
// (and its session-scoped children) after the idle time, although its GET
// stream stays open.
func TestMCPIdleSessionEnds(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "session"}`}), MCP: func(o *mcpserver.Options) { o.IdleTimeout = 300 * time.Millisecond }})
	_, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", nil)
	apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__pid"})
	if n := len(d.Broker.Instances()); n != 1 {
		t.Fatalf("%d instances, want 1", n)
	}
	testenv.WaitFor(t, "the idle session and its child to end", func() bool { return d.MCP.Sessions() == 0 && len(d.Broker.Instances()) == 0 })
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__pid"}); err == nil {
		t.Error("a call on an ended session succeeded")
	}
}

// TestMCPSessionIsBoundToItsPath: a session opened on /mcp/demo is no
// session on /mcp (nor the reverse): the id does not carry a client to
// another path's servers.
func TestMCPSessionIsBoundToItsPath(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	m := d.RawMCP(t) // on /mcp
	m.URL = "http://" + d.TCPAddr + "/mcp/demo"
	resp := m.Send(t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an /mcp session on /mcp/demo: %d, want 404", resp.StatusCode)
	}
}
