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
		BadImports: map[string]string{
			// api reaches the client for code mode (its scripts call this
			// very daemon), so the rule binds the daemon's own files.
			"mcpx.dev/mcpx/client": "the daemon is the other end of the client: its paths, its record and liveness come from internal/paths",
		},
		Except: map[string]string{
			"mcpx.dev/mcpx/daemon/doctor": "the doctor talks to a running daemon through the client (its own deps_test.go)",
		},
	}.Check(t)
}
