package pool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// Containment's cost (issue 32, bench/README.md): the demo child (this
// test binary re-exec'd) unconfined and confined as a grant holder's
// child is by default (no network, the default limits; the helper is
// this test binary too, whose inits are fewer than mcpx's). Run the
// variants alternated, each round one invocation, and compare within
// rounds:
//
//	go test -c -o /tmp/pool.test ./pool
//	for i in 1 2 3 4 5; do /tmp/pool.test -test.run '^$' -test.bench 'Containment' -test.benchtime 20x; done
//
// Besides ns/op they report this process's CPU per op (pool-cpu-ns/op)
// and the child's (child-cpu-ns/op): for a spawn the helper's and the
// child's whole life, reaped at Close; for a warm call the child's CPU
// over the calls, from /proc.

// benchSpec is what a grant holder's child gets in the global scope.
var benchSpec = &confine.Spec{Why: confine.WhyCaller, Network: sandbox.NetworkNone, Limits: confine.DefaultLimits}

// benchContained returns the variants by name: "unconfined", "confined"
// (benchSpec), and, to tell what a confined spawn pays for, benchSpec
// without limits (no cgroups) and with the host's network (no network
// namespace).
func benchContained(b *testing.B) map[string]*confine.Spec {
	needSandbox(b, benchSpec)
	noLimits, hostNet := *benchSpec, *benchSpec
	noLimits.Limits = sandbox.Limits{}
	hostNet.Network = sandbox.NetworkAll
	return map[string]*confine.Spec{"unconfined": nil, "confined": benchSpec, "confined-no-limits": &noLimits, "confined-host-network": &hostNet}
}

// BenchmarkContainmentSpawn is spawn-to-first-call: a new pool, the demo
// child started, initialized and asked one echo; the pool's Close (which
// kills and reaps the child) is outside the timer but inside the child's
// CPU, which the kernel counts only once it is reaped. The demo child is a
// Go program that starts in ~50 ms of CPU here: the smallest start a
// confined spawn is compared with.
func BenchmarkContainmentSpawn(b *testing.B) {
	def := pool.Server{Name: "demo", Command: os.Args[0], Env: map[string]string{
		demo.EnvServer: "1", "GORACE": "atexit_sleep_ms=0", proctest.MarkerEnv: proctest.Marker(b)}}
	benchSpawn(b, def, benchEcho(b.Context()), benchContained(b), "unconfined", "confined", "confined-no-limits", "confined-host-network")
}

// BenchmarkContainmentSpawnInterleaved is BenchmarkContainmentSpawn's
// unconfined and confined demo child, one spawn of each per op, in turn
// first, so that a shared machine's load drifts over both alike: per
// variant its wall time, its child's CPU (reaped at Close) and this
// process's CPU per spawn.
func BenchmarkContainmentSpawnInterleaved(b *testing.B) {
	proctest.CheckNoLeaks(b)
	def := pool.Server{Name: "demo", Command: os.Args[0], Env: map[string]string{
		demo.EnvServer: "1", "GORACE": "atexit_sleep_ms=0", proctest.MarkerEnv: proctest.Marker(b)}}
	variants := benchContained(b)
	names := [2]string{"unconfined", "confined"}
	call := benchEcho(b.Context())
	var wall, self, child [2]time.Duration
	n := 0
	for b.Loop() {
		for k := range 2 {
			i := (n + k) % 2
			tg := pool.Target{Server: def.Name, Key: "global", Sandbox: variants[names[i]]}
			c0, s0, w0 := benchChildrenCPU(), benchSelfCPU(), time.Now()
			p := pool.New(pool.Options{ReapInterval: -1, ExecWatch: -1})
			p.SetServers([]pool.Server{def})
			if err := p.Do(b.Context(), tg, call); err != nil {
				b.Fatal(err)
			}
			wall[i] += time.Since(w0)
			self[i] += benchSelfCPU() - s0
			p.Close(context.Background())
			child[i] += benchChildrenCPU() - c0
		}
		n++
	}
	for i, name := range names {
		b.ReportMetric(float64(wall[i])/float64(b.N), name+"-ns/spawn")
		b.ReportMetric(float64(child[i])/float64(b.N), name+"-child-cpu-ns/spawn")
		b.ReportMetric(float64(self[i])/float64(b.N), name+"-pool-cpu-ns/spawn")
	}
}

// BenchmarkContainmentSpawnNode is BenchmarkContainmentSpawn for what the
// sandbox is on by default for: servers installed from npm (two reference
// servers, under node), confined as mcpx registry add confines one (no
// network, the default limits).
func BenchmarkContainmentSpawnNode(b *testing.B) {
	for _, c := range []struct{ pkg, tool, args string }{
		{"@modelcontextprotocol/server-everything", "echo", `{"message":"hi"}`},
		{"@modelcontextprotocol/server-filesystem", "list_allowed_directories", `{}`},
	} {
		name := strings.TrimPrefix(c.pkg, "@modelcontextprotocol/server-")
		b.Run(name, func(b *testing.B) {
			def := pool.Server{Name: name, Command: testenv.Node(b),
				Args: []string{testenv.NPMPackageBin(b, c.pkg), os.TempDir()},
				Env:  map[string]string{proctest.MarkerEnv: proctest.Marker(b)}}
			if name == "everything" {
				def.Args[1] = "stdio"
			}
			call := func(s *client.Session) error {
				_, err := s.CallTool(b.Context(), c.tool, json.RawMessage(c.args), nil)
				return err
			}
			benchSpawn(b, def, call, benchContained(b), "unconfined", "confined")
		})
	}
}

// benchSpawn runs the spawn benchmark of def, its first call call, for
// each variant named.
func benchSpawn(b *testing.B, def pool.Server, call func(*client.Session) error, variants map[string]*confine.Spec, names ...string) {
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			proctest.CheckNoLeaks(b)
			tg := pool.Target{Server: def.Name, Key: "global", Sandbox: variants[name]}
			var self time.Duration
			var flt int64
			children := benchChildrenCPU()
			for b.Loop() {
				start := benchSelfCPU()
				f0 := benchSelfFaults()
				p := pool.New(pool.Options{ReapInterval: -1, ExecWatch: -1})
				p.SetServers([]pool.Server{def})
				if err := p.Do(b.Context(), tg, call); err != nil {
					b.Fatal(err)
				}
				if variants[name] != nil && p.Instances()[0].Sandbox == nil {
					b.Fatal("the child is not confined")
				}
				self += benchSelfCPU() - start
				flt += benchSelfFaults() - f0
				b.StopTimer()
				p.Close(context.Background())
				b.StartTimer()
			}
			b.ReportMetric(float64(self)/float64(b.N), "pool-cpu-ns/op")
			b.ReportMetric(float64(flt)/float64(b.N), "pool-faults/op")
			b.ReportMetric(float64(benchChildrenCPU()-children)/float64(b.N), "child-cpu-ns/op")
		})
	}
}

// BenchmarkContainmentWarmCall is one echo call on a warm instance, the
// same pool holding an unconfined and a confined one.
func BenchmarkContainmentWarmCall(b *testing.B) {
	variants := benchContained(b)
	p, _ := benchWarmPool(b)
	ctx := context.Background()
	call := benchEcho(ctx)
	for _, name := range []string{"unconfined", "confined"} {
		tg := pool.Target{Server: "demo", Key: "global", Sandbox: variants[name]}
		if err := p.Do(ctx, tg, call); err != nil { // warm it
			b.Fatal(err)
		}
		pid := 0
		for _, in := range p.Instances() {
			if (in.Sandbox != nil) == (variants[name] != nil) {
				pid = in.Pid
			}
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := startBenchCPU()
			child := procCPU(b, pid)
			for b.Loop() {
				if err := p.Do(ctx, tg, call); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b)
			b.ReportMetric(float64(procCPU(b, pid)-child)/float64(b.N), "child-cpu-ns/op")
		})
	}
	// interleaved: each op is one call to each instance, in turn first, so
	// that the machine's load and the order hit both alike; per variant
	// its wall time per call and its child's CPU per call.
	b.Run("interleaved", func(b *testing.B) {
		var tgs [2]pool.Target
		var pids [2]int
		for i, name := range []string{"unconfined", "confined"} {
			tgs[i] = pool.Target{Server: "demo", Key: "global", Sandbox: variants[name]}
			for _, in := range p.Instances() {
				if (in.Sandbox != nil) == (variants[name] != nil) {
					pids[i] = in.Pid
				}
			}
		}
		var wall [2]time.Duration
		child := [2]time.Duration{procCPU(b, pids[0]), procCPU(b, pids[1])}
		n := 0
		for b.Loop() {
			for k := range 2 {
				i := (n + k) % 2
				start := time.Now()
				if err := p.Do(ctx, tgs[i], call); err != nil {
					b.Fatal(err)
				}
				wall[i] += time.Since(start)
			}
			n++
		}
		for i, name := range []string{"unconfined", "confined"} {
			b.ReportMetric(float64(wall[i])/float64(b.N), name+"-ns/call")
			b.ReportMetric(float64(procCPU(b, pids[i])-child[i])/float64(b.N), name+"-child-cpu-ns/call")
		}
	})
}

// benchSelfFaults counts this process's page faults: a child forked
// rather than vforked (cloned into a user namespace) makes the parent
// fault on every page it writes afterwards, copy-on-write.
func benchSelfFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Minflt + ru.Majflt
}

// benchChildrenCPU is the CPU time of this process's reaped children.
func benchChildrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is pid's CPU time (all its threads) from /proc, in clock ticks
// of 10 ms: enough over the thousands of calls a benchmark makes.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command, which is in parentheses: state is the
	// first; utime and stime are the 12th and 13th.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
