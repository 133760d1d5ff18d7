package fleet_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: fleet is a client of brokers, given its peers and dialer as
// plain values (docs/architecture.md, "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"tailscale.com/...":        "the tree builds and tests without tsnet: tsnet hands fleet its peers and dialer",
			"mcpx.dev/mcpx/api":        "fleet asks brokers as a client; the server side serves GET /v1/fleet with it",
			"mcpx.dev/mcpx/broker/...": "fleet knows brokers only through their API",
			"mcpx.dev/mcpx/cmd/...":    "cmd wires fleet in, not the reverse",
		},
		NoHTTPServer: "fleet only asks",
	}.Check(t)
}
