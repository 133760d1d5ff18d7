package daemon_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the daemon's parts are what `mcpx serve` wires, below the
// command line (docs/architecture.md, "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/cmd/...": "cmd wires the daemon, not the reverse: the daemon's parts are tested without the CLI",
			"tailscale.com/...":     "cmd brings the tailnet node up and adds its listeners; the daemon builds and tests without tsnet",
		},
	}.Check(t)
}
