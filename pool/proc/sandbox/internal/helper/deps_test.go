package helper_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the helper is the sandbox's own, the first code a confined
// child runs; it imports nothing of the module (and, TestImports, little
// of the standard library).
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/...": "the helper runs before every other package's init; the daemon decides, it only does",
		},
	}.Check(t)
}
