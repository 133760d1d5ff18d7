package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"mcpx.dev/mcpx/internal/proctest"
	"mcpx.dev/mcpx/internal/testenv"
)

// TestRunEnvironment runs testdata/runenv/*.txtar on each runtime (as
// TestRun) with real nix set up to work offline (testenv.Nix): a script's
// execution environment, script.environment.
func TestRunEnvironment(t *testing.T) {
	proctest.CheckNoLeaks(t)
	nx := testenv.Nix(t)
	marker := proctest.Env(t)
	for _, rt := range scriptRuntimes(t) {
		t.Run(rt.name, func(t *testing.T) {
			p := runParams(filepath.Join("testdata", "runenv"), rt, marker)
			setup := p.Setup
			p.Setup = func(e *testscript.Env) error {
				for _, kv := range nx.CmdEnv() {
					if k, v, _ := strings.Cut(kv, "="); k == "NIX_CONFIG" || k == "XDG_CACHE_HOME" {
						e.Setenv(k, v)
					}
				}
				e.Setenv("CALLER_PATH", e.Getenv("PATH"))
				var noNix []string // PATH without nix's directory
				for _, d := range filepath.SplitList(e.Getenv("PATH")) {
					if _, err := os.Stat(filepath.Join(d, "nix")); err != nil {
						noNix = append(noNix, d)
					}
				}
				e.Setenv("NONIX_PATH", strings.Join(noNix, string(filepath.ListSeparator)))
				return setup(e)
			}
			testscript.Run(t, p)
		})
	}
}
