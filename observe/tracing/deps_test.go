package tracing_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: tracing is a leaf under the packages it instruments (api,
// api/mcp, broker, pool, the client, the CLI): the OpenTelemetry SDK and
// nothing of mcpx, so every layer may call its hooks.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/...": "a leaf: the packages it instruments import it, never the reverse",
			"tailscale.com/...": "the OpenTelemetry SDK stays out of the tailnet's build (tsnet links no tracing of its own)",
		},
		NoHTTPServer: "an exporter is an HTTP client of the collector, never a server",
	}.Check(t)
}
