package execid_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/deptest"
)

// TestDeps: execid is a leaf under pool (docs/architecture.md, "Dependency
// direction"): it reads files and nothing else.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "a leaf the pool imports to name what a child runs",
		NoHTTPServer: "it reads files only",
	}.Check(t)
}
