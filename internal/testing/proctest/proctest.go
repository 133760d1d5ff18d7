// Package proctest checks that tests which start child processes leave none
// behind.
//
//	func TestPool(t *testing.T) {
//		proctest.CheckNoLeaks(t) // first, so its check runs after the other cleanups
//		cmd := exec.Command(os.Args[0])
//		cmd.Env = append(os.Environ(), proctest.MarkerEnv+"="+proctest.Marker(t))
//		...
//	}
//
// CheckNoLeaks snapshots this process's descendants when it is called. In
// t.Cleanup it polls for up to five seconds until every process that was not
// there at the start is gone, then fails the test listing the leftovers with
// their pid and command line. A process counts as the test's if
//
//   - its parent chain leads to this test process,
//   - its process group id is the pid of such a descendant (children run in
//     their own process groups), or
//   - its environment contains MarkerEnv=Marker(t): this catches orphans that
//     were reparented to init when a middle process died, which no parent
//     chain leads back from.
//
// Zombies (exited, not yet reaped) still count: a child nobody waits for is a
// leak, but one being reaped right now has until the deadline.
//
// Descendants are process-wide, so tests running in parallel see each other's
// children. A process carrying another test's marker is attributed to that
// test only: pass the marker to every child in parallel tests.
//
// The check reads /proc; where there is none (not Linux) it does nothing.
package proctest

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// MarkerEnv is the environment variable that carries a test's marker into
// its child processes.
const MarkerEnv = "MCPX_TEST_MARKER"

// How long the cleanup waits for processes to go away, and how often it looks.
// Variables so that this package's tests can be quick.
var (
	leakDeadline = 5 * time.Second
	pollInterval = 50 * time.Millisecond
)

var (
	markers sync.Map // testing.TB -> string
	seq     atomic.Int64
)

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Marker returns t's marker, the same value on every call for one t and
// different for every test (and every run of the test binary).
func Marker(t testing.TB) string {
	if m, ok := markers.Load(t); ok {
		return m.(string)
	}
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	m, _ := markers.LoadOrStore(t, fmt.Sprintf("%s.%d.%d", name, os.Getpid(), seq.Add(1)))
	return m.(string)
}

// Env returns MarkerEnv=Marker(t), ready to append to a child's environment.
func Env(t testing.TB) string {
	return MarkerEnv + "=" + Marker(t)
}

// markerOf returns t's marker, "" if Marker was never called for t.
func markerOf(t testing.TB) string {
	m, _ := markers.Load(t)
	s, _ := m.(string)
	return s
}

// CheckNoLeaks fails t, at cleanup, if processes started after this call
// are still alive (or unreaped) five seconds into the cleanup. Call it first
// in the test, so that its cleanup runs after every other one.
func CheckNoLeaks(t testing.TB) {
	t.Helper()
	procs, err := scan()
	if err != nil {
		t.Logf("proctest: not checking for leaked processes: %v", err)
		return
	}
	before := make(map[procID]bool)
	for _, p := range procs.descendantsOf(os.Getpid(), nil) {
		before[p.id()] = true
	}
	t.Cleanup(func() {
		t.Helper()
		leftover, err := waitGone(before, markerOf(t))
		if err != nil {
			t.Errorf("proctest: %v", err)
			return
		}
		if len(leftover) > 0 {
			t.Errorf("proctest: %d process(es) leaked:\n%s", len(leftover), describe(leftover))
		}
	})
}

// waitGone polls until no process outside before belongs to the test, or the
// deadline passes, and returns those that remain.
func waitGone(before map[procID]bool, marker string) ([]*proc, error) {
	deadline := time.Now().Add(leakDeadline)
	for {
		procs, err := scan()
		if err != nil {
			return nil, err
		}
		leftover := procs.owned(os.Getpid(), marker, before)
		if len(leftover) == 0 || time.Now().After(deadline) {
			return leftover, nil
		}
		time.Sleep(pollInterval)
	}
}

func describe(ps []*proc) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "\tpid %d (ppid %d, pgid %d, state %s): %s\n", p.pid, p.ppid, p.pgid, p.state, p.cmdline())
	}
	return b.String()
}
