package sandbox_test

import (
	"testing"

	"mcpx.dev/mcpx/internal/testing/deptest"
)

// TestDeps: sandbox is the Linux mechanics of confining one child
// (docs/architecture.md, "Dependency rules": pool/proc knows processes,
// not scopes or states). It takes a resolved Policy and knows nothing of
// servers, configs, callers or the pool that calls it.
func TestDeps(t *testing.T) {
	deptest.Rules{
		Imports: map[string]string{
			"golang.org/x/sys/unix": "the system calls the standard library does not name, Landlock's among them (not go-landlock: its psx costs every daemon ~10 MB, package doc)",
		},
		BadDeps: map[string]string{
			"mcpx.dev/mcpx/pool":       "the pool calls the sandbox, never the reverse",
			"mcpx.dev/mcpx/pool/proc":  "the pool's process layer calls the sandbox, never the reverse",
			"mcpx.dev/mcpx/broker/...": "policies arrive resolved; scopes and callers are the broker's",
			"mcpx.dev/mcpx/config/...": "policies arrive resolved; the config's sandbox setting is the config's",
		},
		NoHTTPServer: "the egress proxy (pool/proc/egress) serves; the sandbox only hands it a listener",
	}.Check(t)
}
