package owner_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: owner tokens are files and hashes: the daemon's API checks
// them and the CLI makes them, so they pull in nothing of either.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly: "owner tokens are read by api and written by cmd; they import neither, nor anything beyond the standard library",
		Leaves:     map[string]string{"mcpx.dev/mcpx/internal/atomicfile": "the file is replaced atomically, as every state file is"},
	}.Check(t)
}
