//go:build linux

package sandbox_test

import (
	"context"
	"os/exec"
	"syscall"
	"testing"

	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// BenchmarkSpawn measures what confining costs a spawn: /bin/true started
// and waited for plainly, and confined (the helper — this test binary —
// in its namespaces, moved into its cgroups, confining itself, then
// exec'ing /bin/true). Compare them as ratios in one run; cpu-ms/op
// (the CPU time of this process and its children) is steadier than ns/op
// on a loaded machine:
//
//	go test -run '^$' -bench Spawn ./pool/proc/sandbox
//
// confined-go-stage starts the Go helper, as a binary built without cgo
// does; the others the C stage (package doc, "Cost").
func BenchmarkSpawn(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		defer cpuPerOp(b)()
		for b.Loop() {
			cmd := exec.Command("/bin/true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	k := sandbox.Probe()
	if k.Landlock == 0 {
		b.Skip("no Landlock: ", k.LandlockWhy)
	}
	policies := map[string]sandbox.Policy{
		"confined": {Read: sandbox.SystemRead(), Write: sandbox.Devices(), Env: []string{"PATH=/usr/bin:/bin"}},
		"confined-limits": {Read: sandbox.SystemRead(), Write: sandbox.Devices(), Env: []string{"PATH=/usr/bin:/bin"},
			Limits: sandbox.Limits{Memory: 1 << 30, Processes: 256, OpenFiles: 1024}},
		"confined-host-network": {Read: sandbox.SystemRead(), Write: sandbox.Devices(), Env: []string{"PATH=/usr/bin:/bin"},
			Network: sandbox.NetworkAll},
	}
	policies["confined-go-stage"] = policies["confined"]
	for _, name := range []string{"confined", "confined-limits", "confined-host-network", "confined-go-stage"} {
		p := policies[name]
		p.Mode = sandbox.BestEffort // measure what this kernel can do
		b.Run(name, func(b *testing.B) {
			if name == "confined-go-stage" {
				sandbox.WithGoStage(b) // the helper of a binary built without cgo
			}
			defer cpuPerOp(b)()
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				cell, err := sandbox.Start(context.Background(), cmd, p)
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				cell.Close()
			}
		})
	}
}

// cpuPerOp reports, when the returned func runs, the CPU time this process
// and its waited-for children used per op since cpuPerOp ran.
func cpuPerOp(b *testing.B) func() {
	before := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-before)/float64(b.N)/1e6, "cpu-ms/op")
	}
}

func cpuTime() int64 {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	ns := func(tv syscall.Timeval) int64 { return tv.Nano() }
	return ns(self.Utime) + ns(self.Stime) + ns(children.Utime) + ns(children.Stime)
}
