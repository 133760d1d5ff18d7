package defaults_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: defaults is a leaf under the pool, the call log, the resolver
// and the config (docs/architecture.md, "Dependency rules"); it holds
// constants, so it can bring nothing into any of them.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "constants read by the pool, the call log, the resolver and the config: it must never bring other packages into them",
		NoHTTPServer: "constants only",
	}.Check(t)
}
