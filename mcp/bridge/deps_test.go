package bridge_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the bridge is an MCP client of any Streamable HTTP endpoint,
// reaching it through the Go client (client) as every program does;
// it carries none of the daemon, and no MCP SDK: it relays bytes, reading
// only the few members HTTP needs (docs/architecture.md, "Dependency
// rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api":                          "the endpoint is reached through the Go client (client), never its server",
			"mcpx.dev/mcpx/api/mcp/...":                  "a relay of any Streamable HTTP endpoint, not of mcpx's own code",
			"mcpx.dev/mcpx/broker/...":                   "the bridge carries none of the daemon",
			"mcpx.dev/mcpx/pool/...":                     "the bridge carries none of the daemon",
			"mcpx.dev/mcpx/daemon/...":                   "the bridge carries none of the daemon",
			"mcpx.dev/mcpx/cmd/...":                      "cmd uses the bridge, not the reverse",
			"tailscale.com/...":                          "a tailnet dialer comes in the client (client.Options.Dial); the bridge builds without tsnet",
			"github.com/modelcontextprotocol/go-sdk/...": "the bridge relays JSON-RPC bytes; the SDK is for its tests, as the client and server it sits between",
		},
		Imports: map[string]string{
			"mcpx.dev/mcpx/client":       "the endpoint is reached as every program reaches the daemon: socket, URL with token, tailnet dialer",
			"mcpx.dev/mcpx/wire":         "header names and problem documents: the contract",
			"mcpx.dev/mcpx/internal/sse": "the SSE codec the client and the pool share",
			"mcpx.dev/mcpx/mcp/jsonrpc":  "MCP's vocabulary: the envelope, the error codes, the method names and the stateless era's standard headers, as mcp/client sends them to url children",
		},
		NoHTTPServer: "the bridge is an HTTP client; stdio is its only server side",
	}.Check(t)
}
