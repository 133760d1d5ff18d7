package mcp_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the MCP endpoint stands where api stands (docs/architecture.md):
// over the broker, reaching children only through it; the HTTP layer
// (identity, the browser guard, listeners) is api's, which mounts it.
func TestDeps(t *testing.T) {
	const below = "the endpoint goes through the broker, which owns the types it hands out"
	deptest.Rules{
		BadDeps: map[string]string{
			"tailscale.com/...":     "the endpoint builds without linking tsnet",
			"mcpx.dev/mcpx/api":     "api mounts the endpoint, not the reverse",
			"mcpx.dev/mcpx/cmd/...": "commands are built from it, not the reverse",
			"net/http/httptest":     "test servers belong in _test files",
		},
		BadImports: map[string]string{
			"mcpx.dev/mcpx/pool/...":                     below,
			"mcpx.dev/mcpx/nixresolve":                   below,
			"mcpx.dev/mcpx/observe/calllog":              below,
			"github.com/modelcontextprotocol/go-sdk/...": "results pass through as the child sent them; the SDK's server decodes them into its types (package doc)",
		},
	}.Check(t)
}
