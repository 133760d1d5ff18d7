package clientgen_test

import (
	"flag"
	"os"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
)

var (
	update  = flag.Bool("update", false, "rewrite the golden files from the compiler's output")
	capture = flag.Bool("capture", false, "capture the npm reference servers' tools/list into testdata/servers (needs node and npm ci --prefix testdata/npm)")
)

func TestMain(m *testing.M) {
	demo.MaybeServe() // in the child: serves the demo server on stdio, then exits
	os.Exit(m.Run())
}
