package pool_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: pool runs children for any caller; it knows servers and keys, not
// configs, scopes or callers (docs/architecture.md, "Dependency rules").
// What it knows of processes it asks pool/proc: it starts, signals and
// waits for none itself.
func TestDeps(t *testing.T) {
	const proc = "the OS machinery is pool/proc's: the pool hands it a command and holds the process it gets back"
	deptest.Rules{
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/broker/...": "broker drives the pool; a pool that imported it would be a cycle in the design, if not yet in the code",
			"mcpx.dev/mcpx/api/...":    "the pool never sees HTTP callers",
			"mcpx.dev/mcpx/tsnet/...":  "the pool never sees the tailnet",
			"mcpx.dev/mcpx/cmd/...":    "commands are built from the pool, not the reverse",
			"mcpx.dev/mcpx/nixresolve": "the broker resolves nix: specs through Options.Resolve; the pool runs what it is given",
			"tailscale.com/...":        "the tree builds and tests without linking tsnet (a 5-minute cold build)",
			"github.com/go-chi/chi/v5": "routing is api's job",
			"net/http/httptest":        "test servers belong in _test files",
		},
		BadImports: map[string]string{
			"syscall":                         proc,
			"golang.org/x/sys/...":            proc,
			"os/exec":                         proc,
			"os/signal":                       proc,
			"mcpx.dev/mcpx/internal/proctree": proc,
			"mcpx.dev/mcpx/internal/launcher": proc,
		},
		NoHTTPServer: "the pool is an HTTP client of url children, never a server",
		Except: map[string]string{
			"mcpx.dev/mcpx/pool/proc":         "the OS machinery, below the pool, with rules of its own",
			"mcpx.dev/mcpx/pool/proc/sandbox": "the kernel's confinement of one child, below proc, with rules of its own",
			"mcpx.dev/mcpx/pool/proc/egress":  "the egress proxy, which serves confined children's HTTP CONNECT: rules of its own",
			"mcpx.dev/mcpx/pool/execid":       "a leaf with rules of its own (it stats files)",
			"mcpx.dev/mcpx/pool/portalloc":    "a leaf with rules of its own (it binds sockets)",
		},
	}.Check(t)
}
