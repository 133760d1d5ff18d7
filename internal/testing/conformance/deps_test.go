package conformance

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the harness is a client of an MCP endpoint and nothing else, so
// a test may point it at mcpx, at the server mcpx fronts, or at any other
// server; it must never reach into the daemon it is judging.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api/...":     "the suite judges the endpoint from outside, over HTTP",
			"mcpx.dev/mcpx/broker/...":  "the suite judges the endpoint from outside, over HTTP",
			"mcpx.dev/mcpx/pool/...":    "the suite judges the endpoint from outside, over HTTP",
			"mcpx.dev/mcpx/daemon/...":  "the suite judges the endpoint from outside, over HTTP",
			"mcpx.dev/mcpx/api/mcp/...": "the suite judges the endpoint from outside, over HTTP",
			"tailscale.com/...":         "the tree builds and tests without linking tsnet (a 5-minute cold build)",
		},
	}.Check(t)
}
