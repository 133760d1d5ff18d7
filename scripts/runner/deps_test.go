package runner_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the runner is `mcpx run`'s lifecycle against the broker, which
// it reaches as any program does, through the Go client
// (docs/architecture.md, "Dependency rules"). Package scripts, which
// it drives, knows no broker at all.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api":        "the broker is reached through the Go client (client), never its server",
			"mcpx.dev/mcpx/broker/...": "no broker in the run: the script and the runner reach it over HTTP",
			"mcpx.dev/mcpx/pool/...":   "the runner starts the script's runtime, never an MCP child",
			"mcpx.dev/mcpx/cmd/...":    "cmd uses the runner, not the reverse",
			"tailscale.com/...":        "a tailnet dialer comes in the client (client.Options.Dial); the runner builds without tsnet",
		},
		NoHTTPServer: "the runner reaches the broker as a client; its one server is the relay",
		HTTPServerFiles: map[string]string{
			"mcpx.dev/mcpx/scripts/runner/relay.go": "mcpx run's relay serves one script on a loopback port, sending each request on through the Go client",
		},
	}.Check(t)
}
