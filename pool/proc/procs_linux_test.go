package proc

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
)

// TestReapOrphansLeavesDirectChildren: a child started through the
// spawner that has exited is not reaped by the orphan reaper, even in a
// process group of its own: its exit status belongs to its exec.Cmd.
func TestReapOrphansLeavesDirectChildren(t *testing.T) {
	proctest.CheckNoLeaks(t)
	cmd := exec.Command("sh", "-c", "exit 7")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startDirect(cmd); err != nil {
		t.Fatal(err)
	}
	defer forget(cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, ok := readProc(cmd.Process.Pid)
		if ok && p.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child never exited: %+v", p)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := reapOrphans(); n != 0 {
		t.Errorf("reapOrphans reaped %d processes, want 0", n)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Errorf("Wait = %v, want exit status 7", err)
	}
}

// TestReapOrphansReapsOthers: a zombie child this process did not start
// through a spawner (here: started, then forgotten) is reaped.
func TestReapOrphansReapsOthers(t *testing.T) {
	proctest.CheckNoLeaks(t)
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startDirect(cmd); err != nil {
		t.Fatal(err)
	}
	forget(cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for reapOrphans() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the zombie was never reaped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "no child processes") {
		t.Errorf("Wait after the reaper = %v, want no child processes", err)
	}
}

func TestParseMark(t *testing.T) {
	st, d, ok := parseMark("0123abcd/42-9876/7")
	if !ok || st != "0123abcd" || d != "42-9876" {
		t.Errorf("parseMark = %q %q %v", st, d, ok)
	}
	for _, bad := range []string{"", "x", "x/", "/y/1", "x/y"} {
		if _, _, ok := parseMark(bad); ok {
			t.Errorf("parseMark(%q) ok", bad)
		}
	}
	if !daemonAlive(marks.self) || daemonAlive("999999999-1") {
		t.Error("daemonAlive: want this process alive and a pid that cannot exist not")
	}
}

// TestRunTrackedRegisters: while RunTracked runs a process, its pid is one
// the orphan reaper leaves alone (registered as direct), and once it is
// waited for, it is forgotten; the exit status is the process's own.
func TestRunTrackedRegisters(t *testing.T) {
	proctest.CheckNoLeaks(t)
	cmd := exec.Command("sh", "-c", "echo $$; read x; exit 7")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- RunTracked(cmd) }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	direct.mu.Lock()
	registered := direct.pids[pid]
	direct.mu.Unlock()
	if !registered {
		t.Errorf("pid %d is not registered while RunTracked waits for it: the reaper may take its exit status", pid)
	}
	stdin.Close()
	if err := <-done; err == nil || err.(*exec.ExitError).ExitCode() != 7 {
		t.Errorf("RunTracked = %v, want exit status 7", err)
	}
	direct.mu.Lock()
	defer direct.mu.Unlock()
	if direct.pids[pid] {
		t.Errorf("pid %d still registered after its wait", pid)
	}
}
