package catalog_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: search and the catalog read tool lists and nothing else
// (docs/architecture.md, "Dependency rules"); the API and the MCP
// endpoint's code mode serve them.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/clientgen/...": "code mode searches and lists tools without the TypeScript generator; the schema reading both need is internal/orderedjson",
			"mcpx.dev/mcpx/api/...":       "the API serves the catalog, not the reverse; tools come in as values",
			"mcpx.dev/mcpx/broker/...":    "tools come in as values: listing them is the caller's job",
			"mcpx.dev/mcpx/pool/...":      "same: the catalog never starts a child",
			"mcpx.dev/mcpx/cmd/...":       "commands use packages, not the reverse",
			"tailscale.com/...":           "the tree builds and tests without linking tsnet",
		},
	}.Check(t)
}
