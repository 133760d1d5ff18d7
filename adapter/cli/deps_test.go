package cli_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: clitools is an adapter (docs/architecture.md): it runs command
// lines for the pool through package adapter, and links no pool, broker
// or config.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/pool/...":   "the pool runs the adapter through adapter.Opener; the daemon hands in proc.RunTracked as Config.Run",
			"mcpx.dev/mcpx/broker/...": "the broker builds the Config from its own; an adapter knows no config file",
			"mcpx.dev/mcpx/api/...":    "an adapter is served by the surfaces above the pool with no code of its own",
		},
		NoHTTPServer: "it runs commands",
	}.Check(t)
}
