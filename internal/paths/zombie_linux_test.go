package paths_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// A zombie is not alive: it has exited and cannot serve, though signal 0
// still finds it (which is why cmd/mcpx's old pidAlive counted it). So a
// daemon record naming a zombie is stale, and the config it names chooses
// its own daemon, not the default one.
func TestZombieIsNotAlive(t *testing.T) {
	proctest.CheckNoLeaks(t)
	child := exec.Command("true")
	child.Env = append(os.Environ(), proctest.Env(t))
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := child.Process.Pid
	defer child.Wait()
	// Wait for it to exit, leaving it unreaped (WNOWAIT): a zombie.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("signal 0 to the zombie %d: %v; the test needs it to exist", pid, err)
	}
	if paths.Alive(pid) {
		t.Errorf("Alive(%d) = true for a zombie", pid)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second) // bounds the test if the zombie counts as alive
	defer cancel()
	if !paths.WaitGone(ctx, pid) {
		t.Errorf("WaitGone(%d) waited for a zombie", pid)
	}

	dir := t.TempDir()
	e := testEnv(dir)
	work := filepath.Join(dir, "work.json")
	writeRecord(t, e, work, pid)
	own, _ := paths.Own(env(e), work)
	if got, _ := paths.Of(env(e), work); got != own {
		t.Errorf("the default daemon's record names a zombie: chose %+v, want %+v", got, own)
	}

	if err := child.Wait(); err != nil {
		t.Fatal(err)
	}
	if paths.Alive(pid) {
		t.Errorf("Alive(%d) = true once reaped", pid)
	}
}
