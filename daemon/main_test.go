package daemon_test

import (
	"os"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/pool"
)

func TestMain(m *testing.M) {
	pool.MaybeWatch()
	demo.MaybeServe()
	os.Exit(m.Run())
}
