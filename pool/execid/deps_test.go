package execid_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: execid is a leaf under pool (docs/architecture.md, "Dependency
// direction"): it reads files and nothing else. Its one import beside the
// standard library is internal/defaults, for the hashing limit's default.
func TestDeps(t *testing.T) {
	deptest.Rules{
		LeavesOnly:   "a leaf the pool imports to name what a child runs",
		NoHTTPServer: "it reads files only",
	}.Check(t)
}
