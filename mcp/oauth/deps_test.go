package oauth_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the OAuth client is MCP with no daemon in it
// (docs/architecture.md, "Dependency rules"; docs/oauth.md): the pool gets
// its round tripper, the broker its sign-ins, and it knows neither.
func TestDeps(t *testing.T) {
	const daemon = "MCP with no daemon in it: the broker and the pool use this client, not the reverse"
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/broker/...": daemon,
			"mcpx.dev/mcpx/pool/...":   daemon,
			"mcpx.dev/mcpx/daemon/...": daemon,
			"mcpx.dev/mcpx/api/...":    daemon,
			"mcpx.dev/mcpx/cmd/...":    daemon,
			"mcpx.dev/mcpx/config/...": "the broker hands it each server's settings (oauth.Server); it reads no config",
			"mcpx.dev/mcpx/mcp/client": "the MCP session is handed an *http.Client whose transport this is; neither knows the other",
			"mcpx.dev/mcpx/client/...": "the Go client of the daemon's API is a program's",
			"tailscale.com/...":        "the tree builds and tests without linking tsnet",
			"github.com/go-chi/chi/v5": "routing is api's job",
			"net/http/httptest":        "test servers belong in _test files",
		},
		NoHTTPServer: "an HTTP client of authorization servers; the loopback listener of a sign-in is the CLI's",
	}.Check(t)
}
