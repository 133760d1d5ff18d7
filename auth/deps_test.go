package auth_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: auth is a leaf below api (docs/architecture.md, "Dependency
// direction"): it knows tokens and files, not HTTP, the broker or the
// tailnet, so api and cmd can use it and its tests run alone.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api/...":    "api verifies tokens with auth; auth does not serve HTTP",
			"mcpx.dev/mcpx/broker/...": "auth carries rights as plain claims (package rights, a leaf); api turns them into a broker.Caller",
			"mcpx.dev/mcpx/pool/...":   "auth has nothing to do with processes",
			"tailscale.com/...":        "only tsnet and cmd link tailscale",
			"net/http":                 "auth is not an HTTP package",
		},
	}.Check(t)
}
