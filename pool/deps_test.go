package pool_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: pool runs children for any caller; it knows servers and keys, not
// configs, scopes or callers (docs/architecture.md, "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/broker/...": "broker drives the pool; a pool that imported it would be a cycle in the design, if not yet in the code",
			"mcpx.dev/mcpx/api/...":    "the pool never sees HTTP callers",
			"mcpx.dev/mcpx/tsnet/...":  "the pool never sees the tailnet",
			"mcpx.dev/mcpx/cmd/...":    "commands are built from the pool, not the reverse",
			"mcpx.dev/mcpx/nixresolve": "the broker resolves nix: specs through Options.Resolve; the pool runs what it is given",
			"tailscale.com/...":        "the tree builds and tests without linking tsnet (a 5-minute cold build)",
			"github.com/go-chi/chi/v5": "routing is api's job",
			"net/http/httptest":        "test servers belong in _test files",
		},
		NoHTTPServer: "the pool is an HTTP client of url children, never a server",
	}.Check(t)
}
