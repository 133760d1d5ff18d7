package egress_test

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

func goroutines() int { return runtime.NumGoroutine() }

// egressGoroutines returns the stacks of goroutines that run code of the
// package (not of its tests): after Close there must be none.
func egressGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "mcpx.dev/mcpx/pool/proc/egress.") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// noLeaks waits, a bounded while, for the goroutines to be back to before.
func noLeaks(t *testing.T, before int) {
	t.Helper()
	for i := 0; goroutines() > before; i++ {
		if i == 500 {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", goroutines(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
