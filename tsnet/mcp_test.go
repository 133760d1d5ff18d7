//lint:file-ignore SA1019 roots and logging are what the MCP endpoint passes between its clients and children of the handshake era; the 2026-07-28 revision deprecates them with a twelve-month window.

package tsnet_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/tsnet"
)

// mcpSession connects the official go-sdk client from node n to the
// broker's /mcp by its MagicDNS name, with no token, a root at root.
func mcpSession(t *testing.T, n *tsnet.Node, root string) (*mcp.ClientSession, error) {
	t.Helper()
	hc, err := n.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "laptop", Version: "1"}, nil)
	c.AddRoots(&mcp.Root{URI: "file://" + root})
	tr := &mcp.StreamableClientTransport{Endpoint: "http://broker.tail-scale.ts.net/mcp", HTTPClient: hc, MaxRetries: -1}
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// TestMCPOverTheTailnet: a laptop node's MCP client reaches /mcp by name
// with no token, its root under its granted root becomes the child's
// directory; so does Claude Code; a node without a grant is refused, and
// Claude Code says why.
func TestMCPOverTheTailnet(t *testing.T) {
	proctest.CheckNoLeaks(t)
	tn := newTailnet(t)
	brokerNode(t, tn, nil)
	laptopNode := tn.node(t, "laptop", nil)
	root := canonical(t, t.TempDir())
	work := filepath.Join(root, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["` + root + `"]}`))
	laptop := newPeer(t, laptopNode)
	testenv.WaitFor(t, "the grant to reach the broker", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code == 200
	})
	cs, err := mcpSession(t, laptopNode, work)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__cwd"})
	if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != work {
		t.Fatalf("demo__cwd over the tailnet: %+v, %v; want %s", res, err, work)
	}

	// Claude Code itself, with the URL alone: connected, and it never goes
	// looking for OAuth (issue 34).
	claude := newClaudeCode(t, laptopNode, claudeDir(t, root))
	line, paths := claude.list(t)
	if !strings.HasSuffix(line, "✔ Connected") {
		t.Errorf("claude mcp list over the tailnet: %q (asked %q), want connected", line, paths)
	}
	wantNoOAuth(t, paths)

	// A tool pattern in the grant: the other tools are not listed, and a
	// call to one is refused as a tool that does not exist.
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["` + root + `"], "tools": ["demo.cwd"]}`))
	testenv.WaitFor(t, "the tool pattern to apply", func() bool {
		code, body := laptop.do(t, "GET", "/v1/whoami", "")
		return code == 200 && strings.Contains(string(body), "demo.cwd")
	})
	narrow, err := mcpSession(t, laptopNode, work)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := narrow.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "demo__cwd" {
		names := []string{}
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		t.Errorf("with tools [demo.cwd], /mcp lists %v", names)
	}
	if res, err := narrow.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"message": "x"}}); err == nil && !res.IsError {
		t.Errorf("a tool the grant's pattern hides was called: %+v", res)
	} else if err != nil && strings.Contains(err.Error(), "demo.cwd") {
		t.Errorf("the refusal names the grant's patterns: %v", err)
	}

	// No grant: refused before MCP begins.
	tn.control.SetGlobalAppCaps(nil)
	testenv.WaitFor(t, "the grant to be removed", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code == http.StatusForbidden
	})
	if _, err := mcpSession(t, laptopNode, work); err == nil || !strings.Contains(err.Error(), "403") && !strings.Contains(strings.ToLower(err.Error()), "forbidden") {
		t.Errorf("a node without a grant connected: %v", err)
	}
	// Claude Code is refused (it shows the 403 as "Needs authentication")
	// and is not sent into OAuth.
	line, paths = claude.list(t)
	if strings.HasSuffix(line, "✔ Connected") {
		t.Errorf("claude mcp list without a grant: %q", line)
	}
	wantNoOAuth(t, paths)
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["` + root + `"]}`))
	testenv.WaitFor(t, "the grant to return", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code == 200
	})
	// With the grant back it connects: it kept no "needs auth" state.
	if line, paths = claude.list(t); !strings.HasSuffix(line, "✔ Connected") {
		t.Errorf("claude mcp list with the grant back: %q (asked %q), want connected", line, paths)
	}
}
