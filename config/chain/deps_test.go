package chain_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: chain is a leaf under broker (docs/architecture.md, "Dependency
// direction"): it names directories and files, and the run helper and the
// broker share it.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "a leaf that only looks at the file system",
		NoHTTPServer: "it reads directories only",
	}.Check(t)
}
