//go:build linux

package helper

import (
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
)

// TestMalformedRequest: a helper sent a request it cannot decode replies
// with why (ReplyError) and exits 126: no crash, no exec. Each stage this
// binary has: the C stage where it was built with cgo, and the Go helper
// (which, also in this test binary, runs in this package's init).
func TestMalformedRequest(t *testing.T) {
	t.Parallel()
	proctest.CheckNoLeaks(t)
	valid := sampleRequest()
	valid.Path, valid.Args = "/bin/true", []string{"true"} // never reached
	valid.LoopbackUp, valid.ProxyPort = false, 0           // nor these, in the host's network
	b := valid.Encode()
	cases := []struct {
		name string
		msg  []byte
		env  string
		want string
	}{
		{"cut short", b[:len(b)/2], "", "sandbox: the helper's message is cut short"},
		{"past its end", append(b[:len(b):len(b)], 1), "", "sandbox: the helper's request has bytes past its end"},
		{"huge count", []byte{0, 0xff, 0xff, 0xff, 0xff, 0x0f}, "", "sandbox: the helper's message is cut short"},
		{"empty", []byte{}, "", "sandbox: the daemon closed before sending the policy"},
	}
	stages := map[string]string{"go": EnvGoStage + "=1"}
	if PreRuntime {
		stages["c"] = ""
		cases = append(cases, struct {
			name string
			msg  []byte
			env  string
			want string
		}{"namespaces unknown", b, EnvUnshare + "=pid", EnvUnshare + "=pid names no namespaces the helper makes"})
	}
	for stage, stageEnv := range stages {
		for _, c := range cases {
			if c.env != "" && stage == "go" {
				continue // the C stage's own
			}
			t.Run(stage+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				reply, status := runHelper(t, c.msg, stageEnv, c.env)
				if !strings.HasPrefix(reply, string(rune(ReplyError))) || !strings.Contains(reply, c.want) {
					t.Errorf("reply %q; want an error reply with %q", reply, c.want)
				}
				if status.Signaled() || status.ExitStatus() != 126 {
					t.Errorf("the helper ended %v; want exit status 126", status)
				}
			})
		}
	}
	// The Go helper cannot make namespaces: asked to, it says so.
	t.Run("go/asked to unshare", func(t *testing.T) {
		t.Parallel()
		reply, _ := runHelper(t, b, EnvGoStage+"=1", EnvUnshare+"=ipc")
		if want := "this executable has no C stage"; !strings.Contains(reply, want) {
			t.Errorf("reply %q; want %q", reply, want)
		}
	})
}

// runHelper starts this test binary as the helper (with env), sends it
// msg, and returns its one reply and how it ended. Were it not the helper,
// it would run no test and exit 0.
func runHelper(t *testing.T, msg []byte, env ...string) (string, syscall.WaitStatus) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "daemon"), os.NewFile(uintptr(fds[1]), "helper")
	defer mine.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append([]string{Env + "=3", proctest.Env(t)}, env...)
	cmd.ExtraFiles = []*os.File{theirs}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.Write(fds[0], msg); err != nil {
		t.Errorf("sending the request: %v", err)
	}
	mine.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, MaxReply)
	n, _ := mine.Read(buf)
	cmd.Wait()
	return string(buf[:max(n, 0)]), cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// TestJoinFails: a cgroup the helper cannot move itself into is a failure
// of the features its limits enforce, named in the report with the file
// and why: it refuses the exec where one of them is fatal, and execs
// where none is. Each stage this binary has.
func TestJoinFails(t *testing.T) {
	t.Parallel()
	proctest.CheckNoLeaks(t)
	stages := map[string]string{"go": EnvGoStage + "=1"}
	if PreRuntime {
		stages["c"] = ""
	}
	const want = "moving into the cgroup /nonexistent/mcpx-1/tasks: no such file or directory"
	for stage, stageEnv := range stages {
		for _, fatal := range []bool{true, false} {
			t.Run(stage+"/fatal="+strconv.FormatBool(fatal), func(t *testing.T) {
				t.Parallel()
				req := Request{Path: "/bin/true", Args: []string{"true"},
					Join: []Join{{File: "/nonexistent/mcpx-1/tasks", Features: []string{"memory", "processes"}}}}
				if fatal {
					req.Fatal = []string{"processes"}
				}
				reply, status := runHelper(t, req.Encode(), stageEnv)
				if !strings.HasPrefix(reply, string(rune(ReplyReport))) {
					t.Fatalf("reply %q; want a report", reply)
				}
				rep, err := DecodeReport([]byte(reply[1:]))
				if err != nil {
					t.Fatal(err)
				}
				wantRep := Report{Failures: []Failure{{Features: []string{"memory", "processes"}, Why: want}}, Refused: fatal}
				if !reflect.DeepEqual(rep, wantRep) {
					t.Errorf("report %+v; want %+v", rep, wantRep)
				}
				if wantExit := map[bool]int{true: 126, false: 0}[fatal]; status.Signaled() || status.ExitStatus() != wantExit {
					t.Errorf("the helper ended %v; want exit status %d (126: refused; 0: /bin/true ran)", status, wantExit)
				}
			})
		}
	}
}
