package proctree_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: proctree is a leaf the pool and nixresolve share
// (docs/architecture.md, "Dependency rules"): it reads /proc and
// signals processes, and knows nothing of children or builds.
func TestDeps(t *testing.T) {
	deptest.Rules{
		LeavesOnly:   "a leaf under the pool and nixresolve: the process table and nothing else",
		NoHTTPServer: "it reads /proc only",
	}.Check(t)
}
