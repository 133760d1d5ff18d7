package openapi_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps holds openapi's dependency rules from its first line of code on
// (docs/architecture.md, "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api":       "documents are generated from the contract (wire), never from the server that serves it",
			"mcpx.dev/mcpx/pool/...":  "schemas only: a document never starts a child",
			"mcpx.dev/mcpx/tsnet/...": "schemas only",
			"mcpx.dev/mcpx/cmd/...":   "cmd uses openapi, not the reverse",
			"tailscale.com/...":       "the tree builds and tests without linking tsnet",
		},
	}.Check(t)
}
