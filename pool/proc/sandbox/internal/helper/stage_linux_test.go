//go:build linux

package helper

import (
	"os"
	"os/exec"
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
