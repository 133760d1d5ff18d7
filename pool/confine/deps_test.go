package confine_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: confine finishes a confined child's policy below the pool
// (docs/architecture.md, "Dependency rules"): the broker decides a Spec
// per caller, the pool finishes it per spawn, and neither the config nor
// the caller reaches this far down.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/pool":       "the pool imports confine, not the other way round",
			"mcpx.dev/mcpx/broker/...": "a Spec arrives decided; callers and rights are the broker's",
			"mcpx.dev/mcpx/config/...": "a Spec arrives decided; the config's setting is the broker's to read",
		},
		NoHTTPServer: "it computes policies",
	}.Check(t)
}
