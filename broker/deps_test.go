package broker_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: broker is the domain (docs/architecture.md, "Dependency
// direction"); it is served by api and tsnet, never the other way round.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api/...":    "the domain takes domain values (CallContext, Caller), never requests; api serves it",
			"mcpx.dev/mcpx/tsnet/...":  "the tailnet node is one way to reach the broker; the broker does not know it",
			"mcpx.dev/mcpx/cmd/...":    "commands are built from the domain, not the reverse",
			"tailscale.com/...":        "the tree builds and tests without linking tsnet (a 5-minute cold build)",
			"github.com/go-chi/chi/v5": "routing is api's job",
			"net/http/httptest":        "test servers belong in _test files",
		},
		NoHTTPServer: "the domain never sees an *http.Request; it may be an HTTP client (url children)",
	}.Check(t)
}
