package proc_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: proc is the OS machinery below the pool (docs/architecture.md,
// "Dependency rules"): it knows processes, pipes, signals and /proc, and
// takes what a process needs (argv, directory, environment, a log) from
// whoever starts one. It knows no server, scope key or lifecycle state.
func TestDeps(t *testing.T) {
	deptest.Rules{
		Imports: map[string]string{
			"golang.org/x/sys/unix":           "the subreaper (prctl), SCM_RIGHTS and SO_PEERCRED for the keeper, wait4 of orphans",
			"mcpx.dev/mcpx/internal/proctree": "the /proc process table, and kills that check what they kill",
			"mcpx.dev/mcpx/internal/launcher": "how to get a launcher a command names that is not installed (Hint)",
		},
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/pool":        "proc is below the pool: the pool starts processes through it, never the reverse",
			"mcpx.dev/mcpx/broker/...":  "a process knows no server definition, scope or caller",
			"mcpx.dev/mcpx/mcp/...":     "a child's pipes are bytes here; MCP is spoken above, by the pool's sessions",
			"mcpx.dev/mcpx/config/...":  "what a child runs is decided above; proc is handed a Command",
			"mcpx.dev/mcpx/adapter/...": "adapters are the pool's; proc runs processes only",
		},
		NoHTTPServer: "it runs processes; it serves nothing",
		Except: map[string]string{
			"mcpx.dev/mcpx/pool/proc/sandbox": "the kernel's confinement of one child, with rules of its own (its deps_test.go)",
			"mcpx.dev/mcpx/pool/proc/egress":  "the egress proxy serves HTTP CONNECT for confined children: rules of its own",
		},
	}.Check(t)
}
