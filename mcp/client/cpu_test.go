package client

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuMeter reports CPU time per op for this process and a child: on a
// shared machine, wall-clock ns/op measures the neighbours as much as the
// code, CPU time does not. On systems without getrusage or /proc the
// metrics are omitted.
type cpuMeter struct {
	pid         int
	self, child time.Duration
}

func startCPU(pid int) *cpuMeter {
	return &cpuMeter{pid: pid, self: selfCPU(), child: procCPU(pid)}
}

func (m *cpuMeter) report(b *testing.B) {
	n := float64(b.N)
	if self := selfCPU(); self > 0 {
		b.ReportMetric(float64(self-m.self)/n, "client-cpu-ns/op")
	}
	if child := procCPU(m.pid); child > 0 {
		b.ReportMetric(float64(child-m.child)/n, "child-cpu-ns/op")
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU reads utime+stime of pid from /proc (clock ticks of 10ms).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
