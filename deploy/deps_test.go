package deploy_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps holds deploy's dependency rules from its first line of code on
// (docs/architecture.md, "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/pool/...":                     "deploy runs systemctl and launchctl, never an MCP child",
			"mcpx.dev/mcpx/tsnet/...":                    "a unit file names the tailnet flags; deploy never joins one",
			"mcpx.dev/mcpx/cmd/...":                      "cmd uses deploy, not the reverse",
			"tailscale.com/...":                          "the tree builds and tests without linking tsnet",
			"mcpx.dev/mcpx/api/...":                      "rendering a unit or an MCP entry needs no HTTP server or client: cmd reads the daemon record and hands deploy the URL and token",
			"mcpx.dev/mcpx/client/...":                   "deploy dials no daemon: cmd reads the daemon record, asks whether it answers, and hands deploy the answer (Daemon)",
			"github.com/modelcontextprotocol/go-sdk/...": "deploy writes clients' MCP entries; it never speaks MCP",
		},
	}.Check(t)
}
