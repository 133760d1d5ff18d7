package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool"
)

// BenchmarkPoolFull is the pool-full run: a server with max 8, 64
// callers spread over 50 scope keys, each call an echo with a 30 s deadline.
// One op is one run of 640 calls on a fresh pool; it reports per run the
// children spawned, the instances evicted and the calls refused with
// ErrExhausted (the API's 503). Spawns and evictions are counted from the
// pool's log records, so the same benchmark measures older pools too.
func BenchmarkPoolFull(b *testing.B) {
	const (
		servMax = 8
		keys    = 50
		callers = 64
		perCall = 10
	)
	proctest.CheckNoLeaks(b)
	var spawns, evictions, refused, calls, failed atomic.Int64
	for b.Loop() {
		counter := &logCounter{counts: map[string]*atomic.Int64{"spawned": &spawns, "evicting": &evictions}}
		p := pool.New(pool.Options{ReapInterval: -1, Logger: slog.New(counter)})
		p.SetServers([]pool.Server{{Name: "demo", Command: os.Args[0], Max: servMax,
			Env: map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(b)}}})
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				for i := range perCall {
					tg := pool.Target{Server: "demo", Key: fmt.Sprintf("session:%d", (c*7+i*13)%keys)}
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					_, err := call(ctx, p, tg, "echo", map[string]string{"message": "hi"})
					cancel()
					calls.Add(1)
					switch {
					case errors.Is(err, pool.ErrExhausted):
						refused.Add(1)
					case err != nil:
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		p.Close(ctx)
		cancel()
	}
	n := float64(b.N)
	b.ReportMetric(float64(spawns.Load())/n, "spawns/run")
	b.ReportMetric(float64(evictions.Load())/n, "evictions/run")
	b.ReportMetric(float64(refused.Load())/n, "503s/run")
	b.ReportMetric(float64(failed.Load())/n, "other-errors/run")
	b.ReportMetric(float64(calls.Load())/n, "calls/run")
}

// logCounter counts log records whose message starts with one of its keys.
type logCounter struct {
	counts map[string]*atomic.Int64
}

func (c *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCounter) WithGroup(string) slog.Handler            { return c }
func (c *logCounter) Handle(_ context.Context, r slog.Record) error {
	for prefix, n := range c.counts {
		if strings.HasPrefix(r.Message, prefix) {
			n.Add(1)
		}
	}
	return nil
}
