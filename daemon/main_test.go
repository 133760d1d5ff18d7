package daemon_test

import (
	"os"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/pool/proc"
)

func TestMain(m *testing.M) {
	proc.MaybeWatch()
	demo.MaybeServe()
	os.Exit(m.Run())
}
