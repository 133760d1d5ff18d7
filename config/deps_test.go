package config_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: config is a leaf over leaves (docs/architecture.md,
// "Dependency rules"): reading a JSON file links none of the daemon.
// Whoever parses a config (the CLI's `mcpx config check`, the broker, a
// test) gets its checks and nothing else; the defaults come from
// internal/defaults and the nix grammar from nixresolve/nixspec.
func TestDeps(t *testing.T) {
	deptest.Rules{
		LeavesOnly: "a config file is data: parsing it must not link the pool, the MCP client, the call log or the resolver",
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/pool/...":        "the pool's defaults are stated in internal/defaults; config never links the process pool or the MCP client",
			"mcpx.dev/mcpx/observe/calllog": "the call log's defaults are stated in internal/defaults",
			"mcpx.dev/mcpx/nixresolve":      "the spec grammar is nixresolve/nixspec; the resolver runs nix",
			"mcpx.dev/mcpx/broker":          "the broker reads configs, never the reverse",
		},
		NoHTTPServer: "a config file is data",
	}.Check(t)
}
