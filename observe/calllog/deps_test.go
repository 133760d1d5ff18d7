package calllog_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the call log is written beside every call and read by the
// stats route; it needs nothing but files (docs/architecture.md,
// "Dependency rules"). Its one import beside the standard library is
// internal/defaults, for its options' defaults.
func TestDeps(t *testing.T) {
	deptest.Rules{
		LeavesOnly: "a JSON-lines writer and reader need only the standard library (and the leaf stating their defaults); the broker imports it, never the reverse",
		BadImports: map[string]string{
			"net/http": "records are files; the api package serves their summary",
		},
	}.Check(t)
}
