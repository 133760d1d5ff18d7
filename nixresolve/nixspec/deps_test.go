package nixspec_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: nixspec is the grammar alone, a leaf that config reads
// to check a server's nix: command and environment (docs/architecture.md,
// "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "a leaf the config imports to check specs: it must never bring the resolver (or anything else) with it",
		NoHTTPServer: "a parser",
	}.Check(t)
}
