package registrytest_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: the test registry is standard library only, so any test may
// start one without linking more than it asked for.
func TestDeps(t *testing.T) {
	deptest.Rules{
		StdlibOnly:      "a fake at the edge of the machine: JSON over httptest",
		NoHTTPServer:    "only the test registry itself serves",
		HTTPServerFiles: map[string]string{"mcpx.dev/mcpx/internal/testing/registrytest/registrytest.go": "the registry's API, served for tests"},
	}.Check(t)
}
