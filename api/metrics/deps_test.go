package metrics_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: metrics reads the broker and formats what it reads; package
// api serves it, with the API's authentication (docs/architecture.md,
// "Dependency rules").
func TestDeps(t *testing.T) {
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/api/...":                                   "api serves the metrics (and counts its denials here); the reverse would be a cycle",
			"mcpx.dev/mcpx/tsnet/...":                                 "metrics never sees the tailnet",
			"mcpx.dev/mcpx/cmd/...":                                   "commands are built from packages, not the reverse",
			"tailscale.com/...":                                       "the tree builds and tests without linking tsnet (a 5-minute cold build)",
			"github.com/go-chi/chi/v5":                                "routing is api's job",
			"github.com/prometheus/client_golang/prometheus/promhttp": "api serves /metrics with its own authentication and problems, not promhttp's handler",
		},
		BadImports: map[string]string{
			"mcpx.dev/mcpx/pool/...":        "metrics reads what it counts through the broker (Stats, Counters, Instances, NixStats, RecordsStatus), as api does",
			"mcpx.dev/mcpx/nixresolve":      "same: through the broker",
			"mcpx.dev/mcpx/observe/calllog": "same: through the broker",
		},
		NoHTTPServer: "api serves the metrics; this package only formats them",
	}.Check(t)
}
