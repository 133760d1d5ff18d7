package api_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: api is the HTTP layer over the broker (docs/architecture.md,
// "Dependency rules"); the tailnet reaches it through a listener and an
// identity function that cmd wires in. It reaches the packages below the
// broker only through the broker, which owns the types it hands out: they
// are direct imports it must not have (the broker itself depends on them).
func TestDeps(t *testing.T) {
	const below = "the API goes through the broker, which owns the types it hands out (broker.Instance, broker.Event, broker.InputRequest, broker.NixProgram, broker.CallStatsQuery, ...)"
	deptest.Rules{
		BadDeps: map[string]string{
			"tailscale.com/...":       "the tree builds and tests without linking tsnet (a 5-minute cold build); cmd hands api the tailnet's listener and identity",
			"mcpx.dev/mcpx/tsnet/...": "same: api must build without tailscale",
			"mcpx.dev/mcpx/cmd/...":   "commands are built from api, not the reverse",
			"net/http/httptest":       "test servers belong in _test files",
		},
		BadImports: map[string]string{
			"mcpx.dev/mcpx/pool/...":        below,
			"mcpx.dev/mcpx/nixresolve":      below,
			"mcpx.dev/mcpx/observe/calllog": below,
		},
	}.Check(t)
}
