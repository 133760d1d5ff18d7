package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestRun runs testdata/run/*.txtar once per runtime — deno and bun from
// testdata/npm, Debian's node — and testdata/run/any/*.txtar on node, with $MCPX_RUNTIME naming its binary and
// the XDG directories of TestScripts; [deno], [bun] and [node] say which
// runs. Extra command:
//
//	waitgrep file regexp     wait until file has a line matching regexp
func TestRun(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	proctest.CheckNoLeaks(t)
	marker := proctest.Env(t)
	rts := scriptRuntimes(t)
	for _, rt := range rts {
		t.Run(rt.name, func(t *testing.T) {
			testscript.Run(t, runParams(filepath.Join("testdata", "run"), rt, marker))
		})
	}
	// The scripts of testdata/run/any check what the runtime has no part
	// in (scripts in other languages): once, on node.
	t.Run("any", func(t *testing.T) {
		testscript.Run(t, runParams(filepath.Join("testdata", "run", "any"), rts[2], marker))
	})
}

// scriptRuntime is a runtime the script tests run on.
type scriptRuntime struct{ name, path string }

// scriptRuntimes are deno and bun from testdata/npm, and Debian's node.
func scriptRuntimes(t *testing.T) []scriptRuntime {
	return []scriptRuntime{
		// The deno package's bin is a node wrapper; its binary lies beside it.
		{"deno", filepath.Join(filepath.Dir(testenv.NPMPackageBin(t, "deno")), "deno")},
		{"bun", testenv.NPMPackageBinNamed(t, "bun", "bun")},
		{"node", testenv.Node(t)},
	}
}

// runParams are the testscript parameters of the scripts in dir on rt.
func runParams(dir string, rt scriptRuntime, marker string) testscript.Params {
	return testscript.Params{
		Dir: dir,
		Setup: func(e *testscript.Env) error {
			run, err := os.MkdirTemp("", "mcpx")
			if err != nil {
				return err
			}
			e.Defer(func() { os.RemoveAll(run) })
			if err := usePlainMCPX(e); err != nil {
				return err
			}
			e.Setenv("XDG_RUNTIME_DIR", run)
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(e.WorkDir, "config"))
			e.Setenv("XDG_STATE_HOME", filepath.Join(e.WorkDir, "state"))
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			e.Setenv("SOCK", filepath.Join(run, "mcpx", "mcpx.sock"))
			e.Setenv("MCPX_RUNTIME", rt.path)
			e.Setenv("RUNTIME", rt.name)
			e.Setenv("NO_COLOR", "1")
			k, v, _ := strings.Cut(marker, "=")
			e.Setenv(k, v)
			e.Defer(func() { stopRecordedDaemon(filepath.Join(e.WorkDir, "state", "mcpx")) })
			return nil
		},
		// [deno], [bun], [node]: the runtime the script runs on.
		Condition: func(cond string) (bool, error) {
			for _, r := range []string{"deno", "bun", "node"} {
				if cond == r {
					return rt.name == r, nil
				}
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitsock":   waitSock,
			"waitgrep":   waitGrep,
			"exits":      exits,
			"nochildren": noChildren,
		},
	}
}

func waitGrep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitgrep file regexp")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(ts.MkAbs(args[0]))
		if re.Match(b) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s has no line matching %q; it holds:\n%s", args[0], args[1], b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
