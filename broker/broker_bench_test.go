package broker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// BenchmarkBrokerCallTool measures broker.CallTool end to end without HTTP:
// cwd canonicalisation, scope resolution, the pool, the tool check and the
// echo round trip to a warm demo child (this test binary re-exec'd). The
// worktree cases resolve a real linked worktree made with git; "global" is
// the same call with no cwd, so the difference is what resolution costs.
// broker-cpu-ns/op is this process's CPU per call (the child's is not in it).
//
// To see where the broker's time goes:
//
//	go test -run '^$' -bench 'BrokerCallTool/worktree/c=1' -cpuprofile cpu.out ./broker
//	go tool pprof -top -focus 'mcpx.dev' broker.test cpu.out
func BenchmarkBrokerCallTool(b *testing.B) {
	paths := testenv.Worktrees(b, filepath.Join(b.TempDir(), "app"),
		map[string]string{"go.mod": "module app\n", "sub/deep/er/x.go": "package er\n"}, "app-wt1")
	wt := paths[1]
	br := benchBroker(b, map[string]config.ScopeKind{"wt": config.ScopeWorktree, "global": config.ScopeGlobal})
	cases := []struct {
		name, server, cwd string
	}{
		{"worktree", "wt", wt},
		{"worktree-depth3", "wt", filepath.Join(wt, "sub/deep/er")},
		{"global", "global", ""},
	}
	for _, c := range cases {
		r := broker.Request{Caller: benchCaller, Server: c.server, Context: broker.CallContext{Cwd: c.cwd, Session: "bench"}}
		benchCall(b, br, r) // start the child outside the timing
		b.Run(c.name+"/c=1", func(b *testing.B) {
			b.ReportAllocs()
			cpu := benchCPUNow()
			for b.Loop() {
				benchCall(b, br, r)
			}
			benchCPUReport(b, cpu)
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.SetParallelism(16) // 32 callers on 2 cores, as the load tool's c=32
			b.ReportAllocs()
			cpu := benchCPUNow()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					benchCall(b, br, r)
				}
			})
			benchCPUReport(b, cpu)
		})
	}
}

// BenchmarkBrokerTarget is the broker's work before the pool: checking the
// caller, canonicalising the cwd and resolving the scope.
func BenchmarkBrokerTarget(b *testing.B) {
	paths := testenv.Worktrees(b, filepath.Join(b.TempDir(), "app"), map[string]string{"go.mod": "module app\n"}, "app-wt1")
	br := benchBroker(b, map[string]config.ScopeKind{"wt": config.ScopeWorktree})
	r := broker.Request{Caller: benchCaller, Server: "wt", Context: broker.CallContext{Cwd: paths[1], Session: "bench"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.Target(r); err != nil {
			b.Fatal(err)
		}
	}
}

var benchCaller = broker.Caller{Name: "local:bench", Via: "unix", Local: true, Owner: true, Rights: rights.Rights{{Admin: true}}}

var benchArgs = json.RawMessage(`{"message":"hi"}`)

func benchCall(b *testing.B, br *broker.Broker, r broker.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := br.CallTool(ctx, r, "echo", benchArgs, nil); err != nil {
		b.Fatalf("CallTool(%s, cwd %q): %v", r.Server, r.Context.Cwd, err)
	}
}

// benchBroker serves the demo server under each name with that scope; the
// broker is closed and its children checked gone at cleanup.
func benchBroker(b *testing.B, scopes map[string]config.ScopeKind) *broker.Broker {
	b.Helper()
	return newDemoBroker(b, scopes)
}

func benchCPUNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchCPUReport(b *testing.B, start time.Duration) {
	if now := benchCPUNow(); start > 0 && b.N > 0 {
		b.ReportMetric(float64(now-start)/float64(b.N), "broker-cpu-ns/op")
	}
}
