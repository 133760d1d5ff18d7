package daemon_test

import (
	"os"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/pool/proc"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.MaybeExec() // in a confined child's helper: confine, exec, never return
	proc.MaybeWatch()
	demo.MaybeServe()
	os.Exit(m.Run())
}
