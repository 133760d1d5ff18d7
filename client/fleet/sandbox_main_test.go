package fleet_test

import (
	"os"
	"testing"

	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// TestMain lets this test binary be a confined child's helper: a broker
// here confines the children of callers who are not the owner, and the
// helper is the running executable (package sandbox).
func TestMain(m *testing.M) {
	sandbox.MaybeExec()
	os.Exit(m.Run())
}
