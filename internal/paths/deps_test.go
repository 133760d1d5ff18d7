package paths_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the daemon's file layout and liveness are read by the daemon,
// the Go client and the CLI alike (docs/architecture.md, "Dependency
// rules"), so they sit below all three.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "a leaf under the daemon, the client and the CLI: it names the record's file, and leaves its type to the contract (wire)",
		NoHTTPServer: "paths only dial a socket to see that it answers",
	}.Check(t)
}
