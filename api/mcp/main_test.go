package mcp_test

import (
	"os"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// The endpoint's tests beside its code: package mcp's own (server_test.go,
// handoff_test.go, …) reach inside; these (package mcp_test) speak MCP to
// it as clients do, through the API of package api that mounts it, on
// daemons of package apitest with real children. What api itself does
// around the endpoint (the browser guard, the 404 of an unknown server,
// the GET stream's end at the drain) and code mode's tools, which api
// implements, are tested in api.

func TestMain(m *testing.M) {
	sandbox.MaybeExec()  // in a confined child's helper: confine, exec, never return
	demo.MaybeServe()    // in a child: serve the demo server on stdio and exit
	apitest.MaybeServe() // in a child: serve the fixture's URL-mode elicitation server and exit
	os.Exit(m.Run())
}
