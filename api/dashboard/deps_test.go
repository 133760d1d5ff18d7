package dashboard_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the pages are files and a few names; who may load them is
// package api's to decide (docs/architecture.md, "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "the pages are embedded files: no daemon code comes with them",
		NoHTTPServer: "api serves the pages and decides who may load them",
	}.Check(t)
}
