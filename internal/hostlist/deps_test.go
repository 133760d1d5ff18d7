package hostlist_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: hostlist is a leaf (docs/architecture.md, "Dependency rules"):
// the config checks a server's host list with it and the egress proxy
// matches requests with it, so it sits below both.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "a grammar the config (a leaf over leaves) and the egress proxy share",
		NoHTTPServer: "a grammar serves nothing",
	}.Check(t)
}
