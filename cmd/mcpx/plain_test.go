package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The scripts (TestScripts, TestRun, TestRunDeps, TestDocs) start mcpx
// some 1,500 times: as the CLI, as the daemon, and as the daemon's demo
// children. They run a plain build of this package, made once per test run
// by plainMCPX, not this test binary: under `go test -race` a start of the
// race-built test binary costs ~3× the CPU of a plain one (`mcpx help`:
// 0.25 against 0.09 CPU-seconds, measured 2026-12-07) and several times
// its wall time on a busy machine, which made these four tests most of the
// suite's time. What a script checks is the same on either binary. The
// race detector keeps watching the daemon where it runs in process (api's
// apitest daemon, broker, pool) and this package's in-process commands;
// MCPX_TEST_RACE_SCRIPTS=1 runs the scripts on this binary again.
//
// The tests that start processes (the scripts, the upgrade, tailnet, fleet,
// sandbox and conformance process tests) run in parallel with each other:
// each owns its directories, ports and daemons, and proctest's leak checks
// tell one test's processes from another's by their marker; most of their
// time is waiting on children, which another test can use.
const envRaceScripts = "MCPX_TEST_RACE_SCRIPTS"

// plainDir is the directory plainMCPX built mcpx into ("" = none yet):
// removed when the tests end (plainCleanup).
var plainDir string

// plainMCPX builds mcpx once (go build, this package, without the race
// detector or VCS stamping, so that it reports the version this test
// binary does) and returns the directory that holds it, for the front of
// a script's $PATH; "" when MCPX_TEST_RACE_SCRIPTS is set.
var plainMCPX = sync.OnceValues(func() (string, error) {
	if os.Getenv(envRaceScripts) != "" {
		return "", nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building mcpx for the scripts: %v (put go on $PATH, or set %s=1 to run them on the test binary)", err, envRaceScripts)
	}
	dir, err := os.MkdirTemp("", "mcpx-plain")
	if err != nil {
		return "", err
	}
	plainDir = dir
	// -trimpath and CGO_ENABLED=0 as deploy's tests build it (static, as
	// the Containerfile does): the packages compiled once serve both
	// (testenv.GoBuild).
	cmd := exec.Command(goTool, "build", "-trimpath", "-buildvcs=false", "-o", filepath.Join(dir, "mcpx"), "mcpx.dev/mcpx/cmd/mcpx")
	// A marker of its own: the build is no test's child, whichever test's
	// leak check sees it running (proctest).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", fmt.Sprintf("%s=plain-build.%d", proctest.MarkerEnv, os.Getpid()))
	if out, err := testenv.GoBuild(cmd); err != nil {
		return "", fmt.Errorf("building mcpx for the scripts: %v\n%s", err, out)
	}
	return dir, nil
})

// usePlainMCPX puts plainMCPX's mcpx first on the script's $PATH, ahead of
// testscript's copy of this test binary.
func usePlainMCPX(e *testscript.Env) error {
	dir, err := plainMCPX()
	if err != nil || dir == "" {
		return err
	}
	e.Setenv("PATH", dir+string(os.PathListSeparator)+e.Getenv("PATH"))
	return nil
}

// plainCleanup is the test binary's testing.M, removing plainDir when the
// tests are done (testscript.Main exits with Run's code).
type plainCleanup struct{ m *testing.M }

func (p plainCleanup) Run() int {
	code := p.m.Run()
	if plainDir != "" {
		os.RemoveAll(plainDir)
	}
	return code
}
