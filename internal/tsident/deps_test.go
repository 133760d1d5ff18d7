package tsident_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: tsident is a leaf that clientgen and config share, so that the
// client's namespaces and the config's check of server names cannot drift
// apart; it imports only the standard library.
func TestDeps(t *testing.T) {
	deptest.Rules{
		LeavesOnly:   "shared by the client generator and the config, it must pull in nothing of theirs",
		NoHTTPServer: "it makes names only",
	}.Check(t)
}
