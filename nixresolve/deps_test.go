package nixresolve_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps holds nixresolve's dependency rules from its first line of code on
// (docs/architecture.md, "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/broker/...": "the broker asks nixresolve for a program; nixresolve never sees configs or callers",
			"mcpx.dev/mcpx/pool/...":   "resolution sits beside the pool, not on it",
			"mcpx.dev/mcpx/api/...":    "no HTTP",
			"mcpx.dev/mcpx/tsnet/...":  "no HTTP",
			"tailscale.com/...":        "no HTTP",
		},
		BadImports: map[string]string{
			"net/http": "nix does its own fetching; nixresolve runs nix and reads its output",
		},
	}.Check(t)
}
