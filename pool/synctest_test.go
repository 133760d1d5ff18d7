package pool_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"mcpx.dev/mcpx/pool"
)

// The pool's timing under testing/synctest: time in the bubble is fake and
// passes only when every goroutine in it waits. A child process cannot run
// in a bubble, so these use a url server with no network: its start fails
// at once, which leaves an instance without a child in the pool (idle,
// counting one failure), all the reaper and the backoff need.

// noNetwork answers every request with an error, without I/O.
type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("this test has no network")
}

// newOfflinePool is a pool in the current bubble with one url server,
// "remote", that cannot start, and the background reaper on.
func newOfflinePool(t *testing.T, opts pool.Options) *pool.Pool {
	t.Helper()
	opts.HTTPClient = &http.Client{Transport: noNetwork{}}
	p := pool.New(opts)
	p.SetServers([]pool.Server{{Name: "remote", URL: "http://remote.invalid/mcp"}})
	t.Cleanup(func() { p.Close(context.Background()) }) // in the bubble, before it ends
	return p
}

var remote = pool.Target{Server: "remote", Key: "global"}

// failStart makes the remote instance by a call whose start fails.
func failStart(t *testing.T, p *pool.Pool) {
	t.Helper()
	if _, err := call(t.Context(), p, remote, "pid", nil); !errors.Is(err, pool.ErrStart) {
		t.Fatalf("a call to the offline server: err = %v, want ErrStart", err)
	}
}

func reaped(p *pool.Pool) bool {
	evs, _, _ := p.Events().Since(0)
	for _, e := range evs {
		if e.Kind == pool.EventReap && strings.HasPrefix(e.Reason, "idle for") {
			return len(p.Instances()) == 0
		}
	}
	return false
}

// TestBackgroundReaper: the reaper's tick reaps an instance once it has
// been idle for its timeout, and not before.
func TestBackgroundReaper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newOfflinePool(t, pool.Options{ReapInterval: 30 * time.Second, IdleTimeout: time.Minute})
		failStart(t, p)
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if reaped(p) || len(p.Instances()) != 1 {
			t.Fatalf("reaped within its idle timeout: %+v", p.Instances())
		}
		// The full reap after the timeout (at 60 s) finds it idle for a
		// minute.
		time.Sleep(time.Second)
		synctest.Wait()
		if !reaped(p) {
			t.Fatalf("not reaped a minute idle: %+v", p.Instances())
		}
	})
}

// TestBackgroundReaperFollowsTheClock: when a full reap is due is read
// from Options.Now, the clock reap judges idleness by, not from the
// ticker: time that passes for the ticker alone reaps nothing, and an
// injected clock that passes the idle timeout is reaped at the next tick.
func TestBackgroundReaperFollowsTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newClock()
		p := newOfflinePool(t, pool.Options{ReapInterval: 30 * time.Second, IdleTimeout: time.Minute, Now: clk.Now})
		failStart(t, p)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if reaped(p) {
			t.Fatal("reaped although the pool's clock did not move")
		}
		clk.Add(2 * time.Minute)
		time.Sleep(time.Second) // one tick
		synctest.Wait()
		if !reaped(p) {
			t.Fatalf("not reaped at the tick after the pool's clock passed the idle timeout: %+v", p.Instances())
		}
	})
}

// TestBackoffOnTheDefaultClock: after three failed starts in a row the
// instance backs off for a second, and once the second has passed the next
// call starts again; with no injected clock, the backoff is judged by
// time.Now.
func TestBackoffOnTheDefaultClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newOfflinePool(t, pool.Options{ReapInterval: -1})
		for range 3 {
			failStart(t, p)
		}
		_, err := call(t.Context(), p, remote, "pid", nil)
		var pe *pool.Error
		if !errors.Is(err, pool.ErrBackoff) || !errors.As(err, &pe) || pe.RetryAfter != time.Second {
			t.Fatalf("after three failed starts: err = %v, want ErrBackoff with RetryAfter 1s", err)
		}
		time.Sleep(pe.RetryAfter - time.Nanosecond)
		if _, err := call(t.Context(), p, remote, "pid", nil); !errors.Is(err, pool.ErrBackoff) {
			t.Fatalf("just before the backoff ends: err = %v, want ErrBackoff", err)
		}
		time.Sleep(time.Nanosecond)
		failStart(t, p) // started again, and failed again
		_, err = call(t.Context(), p, remote, "pid", nil)
		if !errors.As(err, &pe) || !errors.Is(err, pool.ErrBackoff) || pe.RetryAfter != 2*time.Second {
			t.Fatalf("after a fourth failure: err = %v, want ErrBackoff with RetryAfter 2s", err)
		}
	})
}
