package pool_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/proc"
)

// supervise makes the test process the subreaper and orphan reaper the
// daemon is, until the test ends (after its pool is closed and its leak
// check has run).
func supervise(t *testing.T) {
	t.Helper()
	sup, err := proc.Supervise(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sup.Close)
}

// setsidServer is the demo server started by a shell that first leaves a
// grandchild in a session of its own, and writes its pid to pidfile.
func setsidServer(t *testing.T, name, pidfile string) pool.Server {
	def := demoServer(t, name)
	def.Command = "/bin/sh"
	def.Args = []string{"-c", `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >"$1"; exec "$0"`, os.Args[0], pidfile}
	return def
}

// grandchild waits for the pid the shell wrote, and checks that it is the
// sleep and carries the instance's mark.
func grandchild(t *testing.T, pidfile string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(pidfile)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if bytes.Contains(env, []byte(pool.MarkEnv+"=")) {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no marked grandchild in %s (%q)", pidfile, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReaped waits until pid is gone from /proc: killed and reaped, by the
// subreaper since its parent is gone.
func waitReaped(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still there after %s: %s", pid, what, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFaultSetsidGrandchildAfterStop(t *testing.T) {
	supervise(t)
	pidfile := filepath.Join(t.TempDir(), "gc.pid")
	p := newPool(t, pool.Options{}, setsidServer(t, "demo", pidfile))
	mustCall(t, p, pool.Target{Server: "demo", Key: "global"}, "pid", nil)
	gc := grandchild(t, pidfile)
	if err := p.Stop(t.Context(), p.Instances()[0].ID); err != nil {
		t.Fatal(err)
	}
	waitReaped(t, gc, "DELETE of its instance")
}

func TestFaultSetsidGrandchildAfterClose(t *testing.T) {
	supervise(t)
	pidfile := filepath.Join(t.TempDir(), "gc.pid")
	p := newPool(t, pool.Options{}, setsidServer(t, "demo", pidfile))
	mustCall(t, p, pool.Target{Server: "demo", Key: "global"}, "pid", nil)
	gc := grandchild(t, pidfile)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	p.Close(ctx)
	waitReaped(t, gc, "shutdown")
}

// TestReaperLeavesExecStatuses: with the orphan reaper running, children
// that exit at once still report their own exit status, which only their
// exec.Cmd's wait can see.
func TestReaperLeavesExecStatuses(t *testing.T) {
	supervise(t)
	def := demoServer(t, "quick")
	// Each start also orphans a grandchild that exits at once, so the
	// reaper is busy while the children exit.
	def.Command, def.Args = "/bin/sh", []string{"-c", "setsid true & exit 5"}
	p := newPool(t, pool.Options{}, def)
	for i := range 20 {
		_, err := call(t.Context(), p, pool.Target{Server: "quick", Key: fmt.Sprint("call:", i), Ephemeral: true}, "pid", nil)
		var pe *pool.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Detail, "status 5") {
			t.Fatalf("start %d: %v, want the child's exit status 5", i, err)
		}
	}
}
