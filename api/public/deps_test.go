package public_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the public face's resource server knows tokens (auth/access)
// and HTTP, not the broker: api turns an admitted token into a caller and
// serves the MCP endpoint with it.
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/broker/...": "api turns an admitted token into a broker.Caller; the face only says whether it is admitted",
			"mcpx.dev/mcpx/pool/...":   "the face has nothing to do with processes",
			"mcpx.dev/mcpx/api":        "api imports the face",
			"tailscale.com/...":        "only tsnet and cmd link tailscale; cmd hands the face a Funnel listener",
			"mcpx.dev/mcpx/tsnet/...":  "same",
		},
	}.Check(t)
}
