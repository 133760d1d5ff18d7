package argv_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: argv is a leaf the config (a leaf over leaves) and clitools
// share.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "config imports it, and may import only leaves",
		NoHTTPServer: "a grammar",
	}.Check(t)
}
