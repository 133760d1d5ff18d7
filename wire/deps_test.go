package wire_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the contract is data that the server, the Go client and the
// OpenAPI and TypeScript generators all read (docs/architecture.md,
// "Dependency rules"); it pulls in nothing but the standard library
// and the rights leaf.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly: "the contract is plain data: whoever imports it (the client, the generators) gets no daemon code with it",
		Leaves: map[string]string{
			"mcpx.dev/mcpx/auth/rights": "whoami and the token documents show a caller's rights in their one JSON form",
		},
		NoHTTPServer: "the contract names routes; the api package serves them",
	}.Check(t)
}
