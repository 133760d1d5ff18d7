package pool_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool"
)

// stallingHandler stands for a log on a slow disk: it holds every record
// whose message is msg until release is closed, and passes the others.
type stallingHandler struct {
	msg      string
	stalled  chan struct{} // closed when the first record of msg is held
	release  chan struct{}
	stallOne sync.Once
	freeOne  sync.Once
}

func newStallingHandler(msg string) *stallingHandler {
	return &stallingHandler{msg: msg, stalled: make(chan struct{}), release: make(chan struct{})}
}

func (h *stallingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *stallingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *stallingHandler) WithGroup(string) slog.Handler            { return h }

func (h *stallingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.stallOne.Do(func() { close(h.stalled) })
		<-h.release
	}
	return nil
}

func (h *stallingHandler) free() { h.freeOne.Do(func() { close(h.release) }) }

// TestLogOnASlowDiskStallsNoAcquire: each record the pool makes while it
// holds its lock (a reap, a replaced definition, a failed start, a crash,
// an eviction, a refused call) is written after the lock is released. With
// the log's handler stuck on that record, a call to another server still
// gets its instance.
func TestLogOnASlowDiskStallsNoAcquire(t *testing.T) {
	tests := []struct {
		msg   string
		a     func(t *testing.T) pool.Server // the server whose event is logged
		opts  pool.Options
		setup func(t *testing.T, p *pool.Pool, clk *clock) // before the handler stalls
		// trigger makes the pool log msg; it may return before the
		// handler is released, or only after. defs are a and b.
		trigger func(p *pool.Pool, clk *clock, defs []pool.Server)
	}{{
		msg:     "reaping instance",
		setup:   func(t *testing.T, p *pool.Pool, _ *clock) { mustCall(t, p, targetA("k1"), "pid", nil) },
		trigger: func(p *pool.Pool, clk *clock, _ []pool.Server) { clk.Add(time.Hour); p.Reap() },
	}, {
		msg:   "server definition changed; replacing instance",
		setup: func(t *testing.T, p *pool.Pool, _ *clock) { mustCall(t, p, targetA("k1"), "pid", nil) },
		trigger: func(p *pool.Pool, _ *clock, defs []pool.Server) {
			// a's definition changes (its arguments), b's does not.
			a := defs[0]
			a.Args = []string{"-test.run=^$"}
			p.SetServers([]pool.Server{a, defs[1]})
		},
	}, {
		msg: "start failed",
		a:   func(t *testing.T) pool.Server { return demoServer(t, "a", demo.EnvExitAtStart+"=5") },
		trigger: func(p *pool.Pool, _ *clock, _ []pool.Server) {
			call(context.Background(), p, targetA("k1"), "pid", nil)
		},
	}, {
		msg:   "child exited unexpectedly",
		setup: func(t *testing.T, p *pool.Pool, _ *clock) { mustCall(t, p, targetA("k1"), "pid", nil) },
		trigger: func(p *pool.Pool, _ *clock, _ []pool.Server) {
			call(context.Background(), p, targetA("k1"), "crash", nil)
		},
	}, {
		msg:   "evicting the instance idle the longest to make room",
		a:     func(t *testing.T) pool.Server { s := demoServer(t, "a"); s.Max = 1; return s },
		setup: func(t *testing.T, p *pool.Pool, _ *clock) { mustCall(t, p, targetA("k1"), "pid", nil) },
		trigger: func(p *pool.Pool, _ *clock, _ []pool.Server) {
			call(context.Background(), p, targetA("k2"), "pid", nil)
		},
	}, {
		msg:  "refused a call: no room for a new instance",
		a:    func(t *testing.T) pool.Server { s := demoServer(t, "a"); s.Max = 1; return s },
		opts: pool.Options{WaitTimeout: 50 * time.Millisecond},
		setup: func(t *testing.T, p *pool.Pool, _ *clock) {
			// a's one instance stays busy until the test ends.
			busy, done := make(chan struct{}), make(chan struct{})
			go p.Do(context.Background(), targetA("k1"), func(*client.Session) error {
				close(busy)
				<-done
				return nil
			})
			t.Cleanup(func() { close(done) })
			<-busy
		},
		trigger: func(p *pool.Pool, _ *clock, _ []pool.Server) {
			call(context.Background(), p, targetA("k2"), "pid", nil)
		},
	}}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			a := demoServer(t, "a")
			if tt.a != nil {
				a = tt.a(t)
			}
			b := demoServer(t, "b")
			h := newStallingHandler(tt.msg)
			clk := newClock()
			opts := tt.opts
			opts.Logger, opts.Now = slog.New(h), clk.Now
			p := newPool(t, opts, a, b)
			t.Cleanup(h.free) // before the pool's Close
			if tt.setup != nil {
				tt.setup(t, p, clk)
			}
			triggered := make(chan struct{})
			go func() {
				defer close(triggered)
				tt.trigger(p, clk, []pool.Server{a, b})
			}()
			select {
			case <-h.stalled:
			case <-time.After(30 * time.Second):
				t.Fatalf("the pool never logged %q", tt.msg)
			}
			// Waiting for p.mu heeds no context: the bound is here.
			got := make(chan error, 1)
			go func() {
				_, err := call(t.Context(), p, pool.Target{Server: "b", Key: "global"}, "pid", nil)
				got <- err
			}()
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("a call to b while the log is stuck on %q: %v", tt.msg, err)
				}
			case <-time.After(30 * time.Second):
				h.free()
				<-got
				t.Fatalf("a call to b waited for the log stuck on %q: the pool logs under its lock", tt.msg)
			}
			h.free()
			select {
			case <-triggered:
			case <-time.After(30 * time.Second):
				t.Fatal("the trigger did not return once the log was released")
			}
		})
	}
}

func targetA(key string) pool.Target { return pool.Target{Server: "a", Key: "session:" + key} }
