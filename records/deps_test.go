package records_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/deptest"
)

// TestDeps: the call log is written beside every call and read by the
// stats route; it needs nothing but files (docs/architecture.md,
// "Dependency direction").
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly: "a JSON-lines writer and reader need only the standard library; the broker imports it, never the reverse",
		BadImports: map[string]string{
			"net/http": "records are files; the api package serves their summary",
		},
	}.Check(t)
}
