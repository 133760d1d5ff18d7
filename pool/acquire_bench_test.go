package pool_test

import (
	"context"
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool"
)

// The benchmarks here run against one warm instance of the demo server (this
// test binary re-exec'd, see TestMain): Acquire measures what the pool adds
// around a call (lookup, in-flight accounting, release), PoolCallEcho a whole
// echo round trip to the child through the pool. Besides ns/op they report
// this process's CPU per op (pool-cpu-ns/op): on a shared 2-core machine
// wall-clock time measures the neighbours as much as the code.

var benchEchoArgs = json.RawMessage(`{"message":"hi"}`)

// benchWarmPool returns a pool with one started demo instance for the returned
// target, closed at cleanup.
func benchWarmPool(b *testing.B) (*pool.Pool, pool.Target) {
	b.Helper()
	proctest.CheckNoLeaks(b)
	p := pool.New(pool.Options{ReapInterval: -1})
	p.SetServers([]pool.Server{{Name: "demo", Command: os.Args[0],
		Env: map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(b)}}})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	t := pool.Target{Server: "demo", Key: "global"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Do(ctx, t, benchEcho(ctx)); err != nil {
		b.Fatalf("warming the instance: %v", err)
	}
	return p, t
}

func benchEcho(ctx context.Context) func(*client.Session) error {
	return func(s *client.Session) error {
		_, err := s.CallTool(ctx, "echo", benchEchoArgs, nil)
		return err
	}
}

func benchNothing(*client.Session) error { return nil }

func BenchmarkAcquire(b *testing.B) {
	p, t := benchWarmPool(b)
	ctx := context.Background()
	b.Run("c=1", func(b *testing.B) {
		b.ReportAllocs()
		cpu := startBenchCPU()
		for b.Loop() {
			if err := p.Do(ctx, t, benchNothing); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b)
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		cpu := startBenchCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := p.Do(ctx, t, benchNothing); err != nil {
					b.Error(err)
					return
				}
			}
		})
		cpu.report(b)
	})
}

func BenchmarkPoolCallEcho(b *testing.B) {
	p, t := benchWarmPool(b)
	ctx := context.Background()
	call := benchEcho(ctx)
	b.Run("c=1", func(b *testing.B) {
		b.ReportAllocs()
		cpu := startBenchCPU()
		for b.Loop() {
			if err := p.Do(ctx, t, call); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b)
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(16) // 32 callers on 2 cores: the load tool's c=32
		b.ReportAllocs()
		cpu := startBenchCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := p.Do(ctx, t, call); err != nil {
					b.Error(err)
					return
				}
			}
		})
		cpu.report(b)
	})
}

// benchCPUMeter reports this process's CPU time per op.
type benchCPUMeter struct{ start time.Duration }

func startBenchCPU() benchCPUMeter { return benchCPUMeter{benchSelfCPU()} }

func (m benchCPUMeter) report(b *testing.B) {
	if now := benchSelfCPU(); now > 0 && b.N > 0 {
		b.ReportMetric(float64(now-m.start)/float64(b.N), "pool-cpu-ns/op")
	}
}

func benchSelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
