package apitest_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the fixture is test support (docs/architecture.md, "Dependency
// rules": it may import any product package, none may import it). It is
// the daemon's HTTP face in one process, for the tests of api, api/mcp,
// client and scripts/runner, which build without tailscale.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"tailscale.com/...":       "the packages whose tests use it build and test without linking tsnet (a 5-minute cold build)",
			"mcpx.dev/mcpx/tsnet/...": "same: the fixture serves loopback TCP and a unix socket, never a tailnet",
			"mcpx.dev/mcpx/cmd/...":   "commands are the real daemon, started as a process by their own tests",
		},
	}.Check(t)
}
