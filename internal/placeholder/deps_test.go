package placeholder_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: placeholder is a leaf that pool and its peers import
// (docs/architecture.md, "Dependency rules"); it needs nothing but the
// standard library, and must never bring the daemon's packages into them.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "a leaf package that pool and its peers import: it must never bring other packages into them",
		NoHTTPServer: "a leaf package",
	}.Check(t)
}
