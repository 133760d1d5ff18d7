package toolschema_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: toolschema is a leaf that clientgen, catalog and openapi share,
// so that their rules about tool schemas cannot drift apart; it imports only
// internal/orderedjson (itself standard library only).
func TestDeps(t *testing.T) {
	deptest.Rules{
		LeavesOnly:   "shared by the generators and the catalog, it must pull in nothing of theirs",
		NoHTTPServer: "it reads schemas only",
	}.Check(t)
}
