package rights_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: rights is a leaf read by auth, tsnet, wire and the broker;
// it must pull none of them, nor anything else, into whoever reads rights
// (auth stays a leaf, wire stays the contract as data).
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly: "rights are plain values: auth, wire and the broker all read them, so they import nothing of the project or beyond",
	}.Check(t)
}
