package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeTB records what CheckNoLeaks reports instead of failing the real test.
type fakeTB struct {
	testing.TB // the real test, for the methods not overridden
	name       string

	mu       sync.Mutex
	cleanups []func()
	errs     []string
}

func newFake(t *testing.T) *fakeTB { return &fakeTB{TB: t, name: t.Name() + "/fake"} }

func (f *fakeTB) Name() string { return f.name }
func (f *fakeTB) Helper()      {}
func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// finish runs the cleanups, last registered first, as testing does, and
// returns the reported errors.
func (f *fakeTB) finish() string {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	return strings.Join(f.errs, "\n")
}

func quick(t *testing.T) {
	d, p := leakDeadline, pollInterval
	leakDeadline, pollInterval = 500*time.Millisecond, 10*time.Millisecond
	t.Cleanup(func() { leakDeadline, pollInterval = d, p })
}

func start(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestLeakedChildFails(t *testing.T) {
	quick(t)
	f := newFake(t)
	CheckNoLeaks(f)
	cmd := start(t, exec.Command("sleep", "60"))
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	got := f.finish()
	if want := fmt.Sprintf("pid %d ", cmd.Process.Pid); !strings.Contains(got, want) || !strings.Contains(got, "sleep 60") {
		t.Errorf("report = %q, want pid %d and its command line", got, cmd.Process.Pid)
	}
}

func TestReapedChildPasses(t *testing.T) {
	quick(t)
	f := newFake(t)
	CheckNoLeaks(f)
	cmd := start(t, exec.Command("sleep", "60"))
	cmd.Process.Kill()
	cmd.Wait()
	if got := f.finish(); got != "" {
		t.Errorf("report = %q, want none", got)
	}
}

// A child that is reaped while the cleanup polls is not a leak.
func TestChildReapedDuringCleanupPasses(t *testing.T) {
	quick(t)
	f := newFake(t)
	CheckNoLeaks(f)
	cmd := start(t, exec.Command("sleep", "0.1"))
	go cmd.Wait()
	if got := f.finish(); got != "" {
		t.Errorf("report = %q, want none", got)
	}
}

// An unreaped zombie child is a leak.
func TestZombieFails(t *testing.T) {
	quick(t)
	f := newFake(t)
	CheckNoLeaks(f)
	cmd := start(t, exec.Command("true"))
	defer cmd.Wait()
	// Wait for it to exit without reaping it.
	deadline := time.Now().Add(30 * time.Second) // a bound for a loaded machine
	for {
		p, err := readStat(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if p.state == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child never exited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := f.finish(); !strings.Contains(got, "state Z") {
		t.Errorf("report = %q, want the zombie", got)
	}
}

func TestGrandchildFails(t *testing.T) {
	quick(t)
	f := newFake(t)
	CheckNoLeaks(f)
	cmd := exec.Command("sh", "-c", "sleep 60; true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start(t, cmd)
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	waitChildren(t, cmd.Process.Pid, 1)
	if got := f.finish(); !strings.Contains(got, "sh -c sleep 60; true") || strings.Count(got, "\tpid ") != 2 {
		t.Errorf("report = %q, want the shell and its sleep", got)
	}
}

// waitChildren waits until pid has n children.
func waitChildren(t *testing.T, pid, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a bound for a loaded machine
	for {
		pt, err := scan()
		if err != nil {
			t.Fatal(err)
		}
		if len(pt.descendantsOf(pid, nil)) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never had %d children", pid, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// orphan starts `sh -c 'sleep 60 & echo $!'`, waits for the shell, and
// returns the pid of the sleep, now an orphan reparented away from us.
func orphan(t *testing.T, env []string, setpgid bool) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: setpgid}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

func TestOrphanWithMarkerFails(t *testing.T) {
	quick(t)
	f := newFake(t)
	CheckNoLeaks(f)
	pid := orphan(t, append(os.Environ(), Env(f)), false)
	got := f.finish()
	if !strings.Contains(got, fmt.Sprintf("pid %d ", pid)) {
		t.Errorf("report = %q, want orphan %d", got, pid)
	}
}

// An orphan with another test's marker is not this test's leak; without the
// marker (and outside our process groups) it is invisible, which is why
// children should carry the marker.
func TestOrphanOfOtherTestIgnored(t *testing.T) {
	quick(t)
	f := newFake(t)
	CheckNoLeaks(f)
	Marker(f)
	orphan(t, append(os.Environ(), MarkerEnv+"=someone-else"), false)
	if got := f.finish(); got != "" {
		t.Errorf("report = %q, want none", got)
	}
}

func TestDescendantWithOtherMarkerIgnored(t *testing.T) {
	quick(t)
	f := newFake(t)
	CheckNoLeaks(f)
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), MarkerEnv+"=someone-else")
	start(t, cmd)
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if got := f.finish(); got != "" {
		t.Errorf("report = %q, want none", got)
	}
}

// What runs below another test's marked process is that test's too, marked
// or not (a daemon gives its children an environment of its own): tests
// that run in parallel do not report each other's children.
func TestUnmarkedBelowOtherMarkerIgnored(t *testing.T) {
	quick(t)
	f := newFake(t)
	CheckNoLeaks(f)
	cmd := exec.Command("sh", "-c", "env -u "+MarkerEnv+" sleep 60; true")
	cmd.Env = append(os.Environ(), MarkerEnv+"=someone-else")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start(t, cmd)
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	waitChildren(t, cmd.Process.Pid, 1)
	if got := f.finish(); got != "" {
		t.Errorf("report = %q, want none", got)
	}
}

// A process left in the group of a child that is still alive is caught even
// after its parent died.
func TestProcessGroupMemberFails(t *testing.T) {
	quick(t)
	f := newFake(t)
	CheckNoLeaks(f)
	// The leader execs into sleep after its child shell exits, leaving the
	// grandchild sleep orphaned but in the leader's group.
	cmd := exec.Command("sh", "-c", `sh -c 'sleep 61 >/dev/null 2>&1 &'; exec sleep 62`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start(t, cmd)
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	// Wait until the orphan exists.
	var orphanPid int
	deadline := time.Now().Add(30 * time.Second) // a bound for a loaded machine
	for orphanPid == 0 {
		pt, err := scan()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pt {
			if p.pgid == cmd.Process.Pid && p.pid != cmd.Process.Pid && p.ppid != cmd.Process.Pid && strings.Contains(p.cmdline(), "sleep 61") {
				orphanPid = p.pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no orphan in the group")
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := f.finish()
	for _, pid := range []int{cmd.Process.Pid, orphanPid} {
		if !strings.Contains(got, fmt.Sprintf("pid %d ", pid)) {
			t.Errorf("report = %q, want pid %d", got, pid)
		}
	}
}

func TestPreexistingProcessIgnored(t *testing.T) {
	quick(t)
	cmd := start(t, exec.Command("sleep", "60"))
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	f := newFake(t)
	CheckNoLeaks(f)
	if got := f.finish(); got != "" {
		t.Errorf("report = %q, want none", got)
	}
}

func TestMarker(t *testing.T) {
	m := Marker(t)
	if m != Marker(t) {
		t.Error("Marker changed between calls")
	}
	t.Run("sub", func(t *testing.T) {
		if Marker(t) == m {
			t.Error("subtest shares its parent's marker")
		}
	})
	if Env(t) != MarkerEnv+"="+m {
		t.Errorf("Env = %q", Env(t))
	}
	if strings.ContainsAny(m, "= \x00") {
		t.Errorf("marker %q is not env-safe", m)
	}
}

func TestReadStat(t *testing.T) {
	p, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.ppid != os.Getppid() || p.pgid != syscall.Getpgrp() || p.start == 0 {
		t.Errorf("readStat(self) = %+v", p)
	}
}

// The checker itself, on a real test that does not leak.
func TestCheckNoLeaksSelf(t *testing.T) {
	CheckNoLeaks(t)
	cmd := exec.Command("true")
	cmd.Env = append(os.Environ(), Env(t))
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
}
