package pool_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool"
)

// TestCrashAfterAGoodCallRestartsAtOnce: a child that served a call and then
// crashed is restarted by the next call, however often that happens; only
// crashes with no good call between them (TestCrashLoopBackoff) back off.
func TestCrashAfterAGoodCallRestartsAtOnce(t *testing.T) {
	p := newPool(t, pool.Options{}, demoServer(t, "demo"))
	tg := pool.Target{Server: "demo", Key: "global"}
	for i := range 6 {
		if _, err := call(t.Context(), p, tg, "echo", map[string]string{"message": "hi"}); err != nil {
			t.Fatalf("round %d: echo: %v", i, err)
		}
		if _, err := call(t.Context(), p, tg, "crash", map[string]any{"code": 3}); !errors.Is(err, pool.ErrCrashed) {
			t.Fatalf("round %d: crash: err = %v, want ErrCrashed", i, err)
		}
		if st := p.Instances(); len(st) != 1 || st[0].State == pool.StateBackoff {
			t.Fatalf("round %d: status %+v, want no backoff", i, st)
		}
	}
	if st := p.Stats(); st.Crashes != 6 || st.Spawns != 6 || st.Restarts != 5 {
		t.Errorf("stats = %+v, want 6 crashes, 6 spawns, 5 restarts", st)
	}
}

// TestBackoffOverShowsStopped: once the backoff is over, status says what
// the next call will do (start a child), not "backoff" with nothing left.
func TestBackoffOverShowsStopped(t *testing.T) {
	clk := newClock()
	p := newPool(t, pool.Options{Now: clk.Now}, demoServer(t, "demo", demo.EnvExitAtStart+"=5"))
	tg := pool.Target{Server: "demo", Key: "global"}
	for range 3 {
		call(t.Context(), p, tg, "pid", nil)
	}
	st := p.Instances()
	if len(st) != 1 || st[0].State != pool.StateBackoff {
		t.Fatalf("status = %+v, want backoff", st)
	}
	clk.Add(st[0].BackoffUntil.Sub(clk.Now()) + time.Millisecond)
	st = p.Instances()
	if len(st) != 1 || st[0].State != pool.StateStopped || !st[0].BackoffUntil.IsZero() || st[0].LastError == "" {
		t.Errorf("status after the backoff = %+v, want stopped with no backoffUntil and the last error", st)
	}
	if s := p.Stats(); s.StartFailures != 3 || s.Spawns != 0 {
		t.Errorf("stats = %+v, want 3 start failures, no spawn", s)
	}
}

// TestStartTimeoutIsTheBound: a child that never answers initialize fails
// its caller when the start timeout ends, and is gone by then: killed at
// once — not stopped through its stdin and SIGTERM graces on the caller's
// time (it ignores its stdin's end: that would be seconds more), nor left
// running in the background after its start failed.
func TestStartTimeoutIsTheBound(t *testing.T) {
	s := demoServer(t, "demo", demo.EnvHang+"=1")
	s.StartTimeout = 500 * time.Millisecond
	p := newPool(t, pool.Options{}, s)
	_, err := call(t.Context(), p, pool.Target{Server: "demo", Key: "global"}, "pid", nil)
	if !errors.Is(err, pool.ErrStartTimeout) {
		t.Fatalf("err = %v, want ErrStartTimeout", err)
	}
	if left := proctest.Marked(t); len(left) != 0 {
		t.Errorf("the child of the failed start is still there when its caller has the error: %v", left)
	}
	// Killed, not stopped: it never got SIGTERM, the stop sequence's
	// second step, after its stdin's end and a grace. (That it saw its
	// stdin end proves nothing: the client, giving up, closes it first.)
	if tail := tailOf(err); strings.Contains(tail, demo.HangTerminated) {
		t.Errorf("the silent child got SIGTERM before it ended (stderr %q): it was stopped through the graces", tail)
	}
}

// TestFaultWedgedChild: a child that is alive but silent (stopped) is
// found by a ping after a call times out, killed, shown as wedged, and
// replaced by the next call; a bystander's call in flight on it fails with
// an error that says so.
func TestFaultWedgedChild(t *testing.T) {
	p := newPool(t, pool.Options{ProbeTimeout: 300 * time.Millisecond}, demoServer(t, "demo"))
	tg := pool.Target{Server: "demo", Key: "global"}
	pid, _ := strconv.Atoi(mustCall(t, p, tg, "pid", nil))

	bystander := make(chan error, 1)
	go func() {
		_, err := call(t.Context(), p, tg, "sleep", map[string]int{"ms": 600000})
		bystander <- err
	}()
	testenv.WaitFor(t, "the bystander's call in flight", func() bool {
		st := p.Instances()
		return len(st) == 1 && st[0].InFlight == 1
	})
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	// The stop takes effect as each of its threads is next scheduled.
	testenv.WaitFor(t, "the child stopped", func() bool { return proctest.Stopped(pid) })

	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	_, err := call(ctx, p, tg, "echo", map[string]string{"message": "anyone?"})
	cancel()
	if !errors.Is(err, pool.ErrTimeout) {
		t.Fatalf("call to the stopped child: err = %v, want ErrTimeout", err)
	}
	select {
	case err := <-bystander:
		var pe *pool.Error
		if !errors.As(err, &pe) || !errors.Is(err, pool.ErrCrashed) || !strings.Contains(pe.Detail, "wedged") {
			t.Errorf("bystander: err = %v, want ErrCrashed saying the child was wedged", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the bystander's call on the wedged child never ended")
	}
	waitGone(t, pid)
	st := p.Instances()
	if len(st) != 1 || st[0].State == pool.StateReady || !strings.Contains(st[0].LastError, "wedged") {
		t.Errorf("status = %+v, want not ready, last error saying wedged", st)
	}
	if s := p.Stats(); s.Wedged != 1 || s.Crashes != 0 {
		t.Errorf("stats = %+v, want 1 wedged, no crash", s)
	}
	pid2, _ := strconv.Atoi(mustCall(t, p, tg, "pid", nil))
	if pid2 == pid || pid2 == 0 {
		t.Errorf("the next call ran on pid %d, want a new child (old %d)", pid2, pid)
	}
}

// TestFaultPoolFullQueue: with every instance busy, callers that need a
// new one wait in line instead of getting an immediate 503, are served in
// the order they came, and no instance is evicted before the caller that
// started it has had its call (one spawn per caller, no more).
func TestFaultPoolFullQueue(t *testing.T) {
	s := demoServer(t, "demo")
	s.Max = 1
	p := newPool(t, pool.Options{}, s)
	ctx := t.Context()

	// The one slot is busy.
	holding, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- p.Do(ctx, pool.Target{Server: "demo", Key: "session:a"}, func(*client.Session) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding

	// Three callers of other keys arrive in turn and wait in line.
	var mu sync.Mutex
	var order []string
	errs := make(chan error, 3)
	for i, key := range []string{"session:b", "session:c", "session:d"} {
		go func() {
			_, err := call(ctx, p, pool.Target{Server: "demo", Key: key}, "echo", map[string]string{"message": key})
			if err == nil {
				mu.Lock()
				order = append(order, key)
				mu.Unlock()
			}
			errs <- err
		}()
		testenv.WaitFor(t, fmt.Sprintf("%d callers in line", i+1), func() bool { return p.Stats().Queued == int64(i+1) })
	}
	close(release)
	if err := <-holder; err != nil {
		t.Fatalf("holder: %v", err)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("a caller in line: %v, want it served", err)
		}
	}
	if got := strings.Join(order, " "); got != "session:b session:c session:d" {
		t.Errorf("served in the order %q, want b c d", got)
	}
	if st := p.Stats(); st.Spawns != 4 || st.Evictions != 3 || st.Exhausted != 0 || st.Queued != 0 {
		t.Errorf("stats = %+v, want 4 spawns, 3 evictions, no 503, nobody in line", st)
	}
}
