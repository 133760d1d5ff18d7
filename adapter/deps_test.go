package adapter_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: adapter is the interface the pool runs a namespace through and
// the adapters implement (docs/architecture.md, "Dependency rules"); as a
// leaf over MCP's vocabulary it ties neither to the other, and an adapter
// package links no pool.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly: "the interface between the pool and the adapters: a leaf both import",
		Leaves: map[string]string{
			"mcpx.dev/mcpx/mcp/jsonrpc": "its in-process server speaks MCP in the words the pool's client does",
		},
		NoHTTPServer: "an in-process MCP server over a Namespace, no listener",
		Except: map[string]string{
			"mcpx.dev/mcpx/adapter/cli/...":     "an adapter, with rules of its own",
			"mcpx.dev/mcpx/adapter/openapi/...": "an adapter, with rules of its own",
		},
	}.Check(t)
}
