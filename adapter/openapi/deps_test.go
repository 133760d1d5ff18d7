package openapi_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps holds openapitools' dependency rules (docs/architecture.md,
// "Dependency rules"): an adapter is below the broker, beside the pool.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/broker/...": "the pool runs an adapter; the broker is above it",
			"mcpx.dev/mcpx/pool/...":   "the pool imports adapters, not the reverse",
			"mcpx.dev/mcpx/api/...":    "an adapter is an HTTP client of its service, never of the daemon's API",
			"mcpx.dev/mcpx/api/mcp":    "an adapter serves tools through adapter.Transport",
			"mcpx.dev/mcpx/cmd/...":    "cmd uses adapters, not the reverse",
			"tailscale.com/...":        "the tree builds and tests without linking tsnet",
		},
		NoHTTPServer: "an adapter is an HTTP client of the service it wraps",
	}.Check(t)
}
