package paths_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

func TestAlive(t *testing.T) {
	proctest.CheckNoLeaks(t)
	if !paths.Alive(os.Getpid()) || paths.Alive(0) || paths.Alive(-1) {
		t.Error("Alive is wrong about this process, pid 0 or pid -1")
	}
	if !paths.Alive(1) { // another user's (EPERM) when not root
		t.Error("Alive(1) = false")
	}
	running := exec.Command("sleep", "60")
	running.Env = append(os.Environ(), proctest.Env(t))
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	if !paths.Alive(running.Process.Pid) {
		t.Error("a running child is not alive")
	}
	running.Process.Kill()
	running.Wait()
	if paths.Alive(running.Process.Pid) {
		t.Error("a reaped child is alive")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if !paths.WaitGone(ctx, running.Process.Pid) || paths.WaitGone(ctx, os.Getpid()) {
		t.Error("WaitGone is wrong about a gone process or this one")
	}
}

func TestAnswers(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	if paths.Answers(sock) {
		t.Error("no socket answers")
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if !paths.Answers(sock) {
		t.Error("a listening socket does not answer")
	}
	ln.Close()
	if paths.Answers(sock) {
		t.Error("a closed socket answers")
	}
}
