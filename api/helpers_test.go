package api_test

import (
	"os"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// The tests start their daemons with package apitest: a real broker, the
// MCP endpoint and this API over it, on a unix socket and loopback TCP.

func TestMain(m *testing.M) {
	sandbox.MaybeExec()  // in a confined child's helper: confine, exec, never return
	demo.MaybeServe()    // in a child: serve the demo server on stdio and exit
	apitest.MaybeServe() // in a child: serve the fixture's URL-mode elicitation server and exit
	maybePidClient()     // in a child: ask whoami with Mcpx-Pid values and exit
	maybeNSClient()      // in a child: ask whoami, servers and /mcp and exit
	maybeManyTools()     // in a child: serve an MCP server of many tools and exit
	os.Exit(m.Run())
}
