package portalloc_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: portalloc is a leaf under pool (docs/architecture.md,
// "Dependency rules"): it binds loopback sockets and nothing else.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "a leaf the pool imports to hand out ports",
		NoHTTPServer: "it holds sockets, it serves nothing",
	}.Check(t)
}
