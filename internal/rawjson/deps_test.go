package rawjson_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: rawjson is a leaf that mcp/client and api/mcp import
// (docs/architecture.md, "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "a leaf package that the pool's MCP client and the MCP endpoint import: it must never bring other packages into them",
		NoHTTPServer: "a leaf package",
	}.Check(t)
}
