package jsonrpc_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: jsonrpc is the leaf every speaker of MCP in mcpx imports
// (docs/architecture.md, "Dependency rules"): the client of children, the
// endpoint, the bridge and the in-process server.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "a leaf under mcp/client, api/mcp, mcp/bridge and adapter: it must never bring other packages into them",
		NoHTTPServer: "a vocabulary: header names and a header setter for HTTP clients, no server",
	}.Check(t)
}
