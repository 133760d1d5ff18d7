package daemonlog_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the log is written by every package through slog and read
// back by the api; it needs nothing but files.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly: "a rotating file and a slog handler need only the standard library",
		BadImports: map[string]string{
			"net/http": "the api package serves the log; this one reads files",
		},
	}.Check(t)
}
