package tsnet_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps holds tsnet's dependency rules from its first line of code on
// (docs/architecture.md, "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api":     "tsnet hands api a listener and an identity function; it does not import the server side",
			"mcpx.dev/mcpx/cmd/...": "cmd wires tsnet in, not the reverse",
		},
	}.Check(t)
}
