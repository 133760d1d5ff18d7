package scripts_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: scripts finds, bundles and describes scripts; scripts/runner
// runs them against the broker (docs/architecture.md, "Dependency
// direction").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api/...":    "scripts/runner talks to the broker; scripts only prepares what runs",
			"mcpx.dev/mcpx/broker/...": "no broker: a script reaches it through the generated client",
			"mcpx.dev/mcpx/pool/...":   "scripts never start an MCP child",
			"mcpx.dev/mcpx/cmd/...":    "cmd uses scripts, not the reverse",
			"tailscale.com/...":        "the tree builds and tests without linking tsnet",
		},
		NoHTTPServer: "it writes files and runs nothing",
		Except: map[string]string{
			"mcpx.dev/mcpx/scripts/runner": "the run's lifecycle reaches the broker through client; its own deps_test.go holds its rules",
		},
	}.Check(t)
}
