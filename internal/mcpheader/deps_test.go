package mcpheader_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: mcpheader is a leaf that mcp/client and mcp/bridge import
// (docs/architecture.md, "Dependency rules"): the standard library only.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "a leaf package that pool and the bridge import: it must never bring other packages into them",
		NoHTTPServer: "a leaf package",
	}.Check(t)
}
