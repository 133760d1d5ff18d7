package proctree_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/proctree"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestKillTree: a process and what it started in a session of its own are
// all killed, though the setsid'd one is in neither its group nor session.
func TestKillTree(t *testing.T) {
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	cmd := exec.Command("/bin/sh", "-c", "/usr/bin/setsid /bin/sleep 1000 & echo $! > "+pidFile+".tmp; mv "+pidFile+".tmp "+pidFile+"; wait")
	cmd.Env = append(os.Environ(), proctest.Env(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var sleep proctree.Proc
	testenv.WaitFor(t, "the sleep to start", func() bool {
		data, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		p, ok := proctree.Read(pid)
		sleep = p
		return ok && p.PPid == cmd.Process.Pid
	})
	if n := proctree.KillTree(cmd.Process.Pid); n != 2 {
		t.Errorf("KillTree killed %d processes; want 2", n)
	}
	cmd.Wait()
	testenv.WaitFor(t, "the sleep to be gone", func() bool { return !sleep.Alive() })
	if n := proctree.KillTree(cmd.Process.Pid); n != 0 {
		t.Errorf("KillTree of a reaped process killed %d", n)
	}
}
