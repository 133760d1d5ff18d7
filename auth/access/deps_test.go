package access_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the public face's tokens are records and hashes: api/public
// checks them on every request and serves no part of them from here.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly: "access tokens are plain records; the HTTP face that issues and checks them is api/public's",
		Leaves: map[string]string{
			"mcpx.dev/mcpx/internal/atomicfile": "the file is replaced atomically, as every state file is",
			"mcpx.dev/mcpx/auth/rights":         "a token carries the rights its approver gave it",
		},
	}.Check(t)
}
