package placeholder_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/deptest"
)

// TestDeps: placeholder is a leaf that pool and its peers import
// (docs/architecture.md, "Dependency direction"); it needs nothing but the
// standard library, and must never bring the daemon's packages into them.
func TestDeps(t *testing.T) {
	const why = "a leaf package: the standard library only"
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/...": why,
			"github.com/...":    why,
			"golang.org/...":    why,
		},
		NoHTTPServer: why,
	}.Check(t)
}
