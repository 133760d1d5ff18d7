package api_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/deptest"
)

// TestDeps: api is the HTTP layer over the broker (docs/architecture.md,
// "Dependency direction"); the tailnet reaches it through a listener and an
// identity function that cmd wires in.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"tailscale.com/...":       "the tree builds and tests without linking tsnet (a 5-minute cold build); cmd hands api the tailnet's listener and identity",
			"mcpx.dev/mcpx/tsnet/...": "same: api must build without tailscale",
			"mcpx.dev/mcpx/cmd/...":   "commands are built from api, not the reverse",
			"net/http/httptest":       "test servers belong in _test files",
		},
	}.Check(t)
}
