package deploy_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/deptest"
)

// TestDeps holds deploy's dependency rules from its first line of code on
// (docs/architecture.md, "Dependency direction").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api":       "rendering a unit file needs no HTTP server",
			"mcpx.dev/mcpx/pool/...":  "rendering a unit file starts no child",
			"mcpx.dev/mcpx/tsnet/...": "rendering a unit file needs no tailnet",
			"mcpx.dev/mcpx/cmd/...":   "cmd uses deploy, not the reverse",
			"tailscale.com/...":       "the tree builds and tests without linking tsnet",
		},
	}.Check(t)
}
