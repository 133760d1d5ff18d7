//go:build linux

package sandbox

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkSeccompSyscall is what the seccomp filter costs a system call:
// getppid on a thread of its own, plainly and after installSeccomp (with
// everything on that it can refuse). The filtered thread is never unlocked,
// so it ends with its goroutine and the filter with it.
func BenchmarkSeccompSyscall(b *testing.B) {
	for _, filtered := range []bool{false, true} {
		name := "plain"
		if filtered {
			name = "filtered"
		}
		b.Run(name, func(b *testing.B) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				runtime.LockOSThread()
				if filtered {
					if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
						b.Error(err)
						return
					}
					if err := installSeccomp(true, true); err != nil {
						b.Error(err)
						return
					}
				}
				b.ResetTimer()
				start := threadCPU()
				for range b.N {
					unix.Getppid()
				}
				b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "thread-cpu-ns/op")
			}()
			<-done
		})
	}
}

// threadCPU is this thread's CPU time in ns: steadier than wall time on a
// loaded machine.
func threadCPU() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}
