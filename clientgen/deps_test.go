package clientgen_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps holds clientgen's dependency rules from its first line of code on
// (docs/architecture.md, "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api":        "clients are generated from the contract (wire) and schemas, never from the server",
			"mcpx.dev/mcpx/broker/...": "schemas only: generation needs no broker",
			"mcpx.dev/mcpx/pool/...":   "schemas only: generation never starts a child",
			"mcpx.dev/mcpx/tsnet/...":  "schemas only",
			"mcpx.dev/mcpx/cmd/...":    "cmd uses clientgen, not the reverse",
			"tailscale.com/...":        "the tree builds and tests without linking tsnet",
		},
	}.Check(t)
}
