package client_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the MCP client is the pool's session to one child and knows
// nothing above it (docs/architecture.md, "Dependency rules"): no daemon
// in it, and MCP spoken in package jsonrpc's words, by hand.
func TestDeps(t *testing.T) {
	const daemon = "MCP with no daemon in it: the pool runs sessions of this client, not the reverse"
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/broker/...":                   daemon,
			"mcpx.dev/mcpx/pool/...":                     daemon,
			"mcpx.dev/mcpx/daemon/...":                   daemon,
			"mcpx.dev/mcpx/api/...":                      daemon,
			"mcpx.dev/mcpx/cmd/...":                      daemon,
			"mcpx.dev/mcpx/client/...":                   "the Go client of the daemon's API is a program's; this is a child's session",
			"tailscale.com/...":                          "the tree builds and tests without linking tsnet",
			"github.com/modelcontextprotocol/go-sdk/...": "hand-written for its cost (bench/README.md): results pass through as the child sent them; the SDK is for tests",
		},
		NoHTTPServer: "an HTTP client of url children, never a server",
	}.Check(t)
}
