package doctor_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the doctor checks a machine for `mcpx doctor`: the config,
// the state directory, a daemon that may be running (docs/architecture.md,
// "Dependency rules"). Unlike the daemon it checks, it may import the
// client: it asks that daemon over its socket.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/cmd/...": "cmd runs the doctor and prints what it finds, not the reverse",
			"tailscale.com/...":     "cmd checks the tailnet with its own node; the doctor builds and tests without tsnet",
		},
		NoHTTPServer: "the doctor is a client of the daemon it checks, never a server",
	}.Check(t)
}
