package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestRunEnvironment runs testdata/runenv/*.txtar on each runtime (as
// TestRun) with real nix set up to work offline (testenv.Nix): a script's
// execution environment, script.environment. $CALLER_PATH is the PATH the
// script starts with, $NONIX_PATH that without nix's directory.
func TestRunEnvironment(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	nx := testenv.Nix(t)
	runOnRuntimes(t, filepath.Join("testdata", "runenv"), func(_ *testing.T, _ scriptRuntime, e *testscript.Env) {
		for _, kv := range nx.CmdEnv() {
			if k, v, _ := strings.Cut(kv, "="); k == "NIX_CONFIG" || k == "XDG_CACHE_HOME" {
				e.Setenv(k, v)
			}
		}
		e.Setenv("CALLER_PATH", e.Getenv("PATH"))
		var noNix []string
		for _, d := range filepath.SplitList(e.Getenv("PATH")) {
			if _, err := os.Stat(filepath.Join(d, "nix")); err != nil {
				noNix = append(noNix, d)
			}
		}
		e.Setenv("NONIX_PATH", strings.Join(noNix, string(filepath.ListSeparator)))
	}, nil)
}
