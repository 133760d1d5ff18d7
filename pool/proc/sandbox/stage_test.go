//go:build linux

package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool/proc/sandbox"
	"mcpx.dev/mcpx/pool/proc/sandbox/internal/helper"
)

// TestStages: each helper this binary has confines a child alike (one
// child each, every step's effect checked), and the helper that runs is
// the one meant: the C stage (built with cgo) waits for the request in a
// single thread, still in the daemon's user namespace, which it leaves
// only once it has the request; the Go helper waits with the runtime's
// threads, in the namespaces unshare made.
func TestStages(t *testing.T) {
	proctest.CheckNoLeaks(t)
	requireKernel(t, 1, true)
	f := newFixture(t)
	self := userNamespace(os.Getpid())
	stages := []string{"go"}
	if helper.PreRuntime {
		stages = append(stages, "c")
	}
	for _, stage := range stages {
		t.Run(stage, func(t *testing.T) {
			if stage == "go" {
				sandbox.WithGoStage(t)
			}
			threads, userns := stageChild(t, f, self)
			switch {
			case stage == "c" && (threads != 1 || userns != self):
				t.Errorf("the helper waited with %d threads in user namespace %q (the daemon's %q): not the C stage", threads, userns, self)
			case stage == "go" && threads < 2:
				t.Errorf("the helper waited with %d thread: not the Go helper", threads)
			}
		})
	}
}

// stageChild runs one confined child and checks what each of the
// helper's steps did; it returns the helper's threads and user namespace
// while it waited for the request.
func stageChild(t *testing.T, f fixture, self string) (threads int, userns string) {
	p := f.policy
	p.Limits.OpenFiles = 32
	unixSock := "unix " + f.dir + "/none.sock"
	ops := []op{{"read", f.inRoot}, {"read", f.sshKey}, {"status", ""}, {"files", "64"},
		{"connect", unixSock}, {"listen-self", ""}, {"userns", ""}}
	p.Env = childEnv(t, p, ops...)
	c := &confined{cmd: exec.Command(f.testBin)}
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	cell, err := sandbox.Prepare(c.cmd, p)
	if err != nil {
		t.Fatal(err)
	}
	c.cell = cell
	t.Cleanup(c.stop)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	threads, userns = waiting(t, c.cmd.Process.Pid)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := cell.Started(ctx); err != nil {
		t.Fatal(err)
	}
	r := c.wait(t)
	wantOK(t, r, "read"+f.inRoot)
	wantErr(t, r, "read"+f.sshKey, syscall.EACCES)    // Landlock
	wantErr(t, r, "files64", syscall.EMFILE)          // the rlimits
	wantErr(t, r, "connect"+unixSock, syscall.EACCES) // seccomp, or Landlock from ABI 9
	wantOK(t, r, "listen-self")                       // lo is up
	status := r.get(t, "status").Out
	if eff, nnp := statusField(status, "CapEff"), statusField(status, "NoNewPrivs"); eff != "0000000000000000" || nnp != "1" {
		t.Errorf("the child's CapEff %s, NoNewPrivs %s; want none, 1", eff, nnp)
	}
	if got := r.get(t, "userns").Out; got == "" || got == self {
		t.Errorf("the child's user namespace %q, the daemon's %q; want its own", got, self)
	}
	return threads, userns
}

// waiting waits until the helper pid blocks in recvmsg, waiting for the
// request, and returns its threads and user namespace then.
func waiting(t *testing.T, pid int) (threads int, userns string) {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	want := strconv.Itoa(syscall.SYS_RECVMSG) + " "
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(dir + "syscall")
		if err != nil {
			t.Fatalf("the helper: %v", err)
		}
		if !strings.HasPrefix(string(b), want) {
			continue
		}
		status, err := os.ReadFile(dir + "status")
		if err != nil {
			t.Fatal(err)
		}
		threads, _ = strconv.Atoi(statusField(string(status), "Threads"))
		return threads, userNamespace(pid)
	}
	t.Fatal("the helper did not wait for its request within a minute")
	return 0, ""
}

// TestGoStage runs, with the Go helper, the tests whose texts and
// listener the two helpers each make their own way; TestStages checks
// the other steps with it, and TestPrivateNetwork ("on, cloned") and
// TestStartStageFails start it too. Every test runs it in a binary built
// without cgo (cmd/mcpx's TestSandbox tests do).
func TestGoStage(t *testing.T) {
	if !helper.PreRuntime {
		t.Skip("this binary has no C stage: every test here ran the Go helper")
	}
	sandbox.WithGoStage(t)
	t.Run("StartErrors", TestStartErrors)
	t.Run("ProxyNetwork", TestProxyNetwork)
}
