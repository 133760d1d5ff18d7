package egress_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: egress is a leaf under pool (docs/architecture.md, "Dependency
// rules"): the pool hands it listeners and allowlists as plain values, so it
// knows nothing of pools, scopes or config, and the standard library's
// net/http does the protocol work (the package doc says why no library).
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly: "a leaf the pool imports to serve confined children's egress",
		Leaves: map[string]string{
			"mcpx.dev/mcpx/internal/hostlist": "the allowlist's grammar, which the config checks host lists with too",
		},
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/pool":       "the pool imports egress, not the other way round",
			"mcpx.dev/mcpx/broker":     "egress takes a Binding, not a scope",
			"mcpx.dev/mcpx/config":     "egress takes an allowlist, not a config",
			"mcpx.dev/mcpx/config/...": "egress takes an allowlist, not a config",
		},
	}.Check(t)
}
