package client_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the Go client is what the CLI, bench/ and other programs link to
// talk to a broker (docs/architecture.md, "Dependency rules"); it speaks
// the contract in wire and carries none of the daemon.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api":        "the client speaks the contract (wire), not the server's code",
			"mcpx.dev/mcpx/broker/...": "a client carries none of the daemon",
			"mcpx.dev/mcpx/pool/...":   "a client carries none of the daemon",
			"mcpx.dev/mcpx/cmd/...":    "the CLI uses the client, not the reverse",
			"tailscale.com/...":        "the tailnet dialer is passed in (Options.Dial); the client builds without tsnet",
			"github.com/go-chi/chi/v5": "routing is the server's job",
		},
		NoHTTPServer: "a client, never a server",
	}.Check(t)
}
