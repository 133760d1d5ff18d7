package webhook_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the webhook sender is an HTTP client fed by the daemon's
// wiring (docs/architecture.md): it knows no broker, pool or API, only
// bodies to sign and send.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:   "the daemon hands it bytes to sign and POST; it must bring nothing into the daemon",
		NoHTTPServer: "it POSTs to receivers; it serves nothing",
	}.Check(t)
}
