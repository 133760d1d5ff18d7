package registry_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the registry is a client-side tool of the CLI (`mcpx registry`):
// it reads a registry over HTTP and writes a config file, and needs no
// daemon, so it links none of the broker, pool or API.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/broker":     "add writes a config entry; the daemon runs it later (config is read with config alone)",
			"mcpx.dev/mcpx/pool/...":   "nothing is spawned here",
			"mcpx.dev/mcpx/api/...":    "the registry's API is not mcpx's",
			"mcpx.dev/mcpx/nixresolve": "a nix package becomes a nix: command, resolved by the daemon",
			"tailscale.com/...":        "the tree builds and tests without linking tsnet",
		},
		NoHTTPServer: "an HTTP client of a registry, never a server",
	}.Check(t)
}
