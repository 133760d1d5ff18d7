//go:build linux

package sandbox_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// sibling starts /bin/sleep as an unconfined child of the test, and
// returns it with a channel closed when it exits.
func sibling(t *testing.T) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "60")
	cmd.Env = []string{proctest.Env(t)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	return cmd, done
}

func exited(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func killOp(pid int, sig syscall.Signal) op { return op{"kill", fmt.Sprintf("%d %d", pid, sig)} }

// TestSignalsAndPtrace: a confined child can neither signal nor ptrace
// the daemon (here the test process), an unconfined sibling, or a sibling
// confined in a domain of its own; unconfined it can.
func TestSignalsAndPtrace(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	parent := os.Getpid()
	t.Run("off", func(t *testing.T) {
		sib, done := sibling(t)
		ptraceSib, ptraceParent := op{"ptrace", strconv.Itoa(sib.Process.Pid)}, op{"ptrace", strconv.Itoa(parent)}
		r := runPlain(t, killOp(parent, syscall.SIGURG), ptraceParent, ptraceSib, killOp(sib.Process.Pid, syscall.SIGKILL))
		for _, o := range []op{killOp(parent, syscall.SIGURG), ptraceParent, ptraceSib, killOp(sib.Process.Pid, syscall.SIGKILL)} {
			wantOK(t, r, o.Do+o.Arg)
		}
		<-done
	})
	t.Run("on", func(t *testing.T) {
		requireKernel(t, 6, false)
		sib, done := sibling(t)
		confinedSib, err := startConfined(t, f.policy, op{"sleep", ""})
		if err != nil {
			t.Fatal(err)
		}
		ops := []op{
			killOp(parent, syscall.SIGURG), {"ptrace", strconv.Itoa(parent)},
			killOp(sib.Process.Pid, syscall.SIGKILL), {"ptrace", strconv.Itoa(sib.Process.Pid)},
			killOp(confinedSib.cmd.Process.Pid, syscall.SIGKILL), {"ptrace", strconv.Itoa(confinedSib.cmd.Process.Pid)},
		}
		r := runConfined(t, f.policy, ops...)
		for _, o := range ops {
			wantErr(t, r, o.Do+o.Arg, syscall.EPERM)
		}
		if exited(done) {
			t.Error("the unconfined sibling died")
		}
		if confinedSib.cmd.ProcessState != nil || confinedSib.cmd.Process.Signal(syscall.Signal(0)) != nil {
			t.Error("the confined sibling died")
		}
	})
}

// TestAbstractSocket: a confined child cannot connect to an abstract unix
// socket of the daemon's: by default it may make no unix socket (below
// Landlock ABI 9); allowed them, Landlock's scope refuses it on the host's
// network, and a network namespace has abstract sockets of its own.
func TestAbstractSocket(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	name := fmt.Sprintf("mcpx-sandbox-test-%d", os.Getpid())
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go acceptAll(l, nil)
	dial := op{"connect", "unix-abstract " + name}
	t.Run("off", func(t *testing.T) {
		wantOK(t, runPlain(t, dial), dial.Do+dial.Arg)
	})
	t.Run("on", func(t *testing.T) {
		requireKernel(t, 6, false)
		err := runConfined(t, f.policy, dial).get(t, dial.Do+dial.Arg).Err
		if !strings.Contains(err, syscall.EACCES.Error()) && !strings.Contains(err, syscall.EPERM.Error()) {
			t.Errorf("%s: %q; want refused", dial.Arg, err)
		}
	})
	allowed := f.policy
	allowed.UnixSockets = true
	t.Run("on-host-network", func(t *testing.T) {
		requireKernel(t, 6, false)
		p := allowed
		p.Network = sandbox.NetworkAll
		wantErr(t, runConfined(t, p, dial), dial.Do+dial.Arg, syscall.EPERM)
	})
	t.Run("on-private-network", func(t *testing.T) {
		requireKernel(t, 1, true)
		wantErr(t, runConfined(t, allowed, dial), dial.Do+dial.Arg, syscall.ECONNREFUSED)
	})
}

// peer is the process at the other end of a unix socket.
type peer struct {
	pid    int
	userNS string
}

// acceptAll accepts on l until it closes, passing each connection's peer
// to peers (if not nil) before closing it.
func acceptAll(l net.Listener, peers chan<- peer) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		if peers != nil {
			pid := peerPid(c)
			peers <- peer{pid, userNamespace(pid)}
		}
		c.Close()
	}
}

func peerPid(c net.Conn) int {
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0
	}
	var pid int
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

func userNamespace(pid int) string {
	ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid))
	return ns
}

// TestUnixSockets: a confined child cannot connect to a pathname unix
// socket of the daemon's (an ssh agent's, a container engine's would do as
// well), even in a directory it may not read: below Landlock ABI 9 a
// seccomp filter refuses it unix sockets of its own, from ABI 9 Landlock
// refuses the connection. With Policy.UnixSockets below ABI 9 it connects
// (the hole), and the daemon can tell it by its user namespace.
func TestUnixSockets(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	sock := filepath.Join(f.dir, "state", "mcpx.sock")
	os.Mkdir(filepath.Dir(sock), 0o700)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peers := make(chan peer, 1)
	go acceptAll(l, peers)
	self := userNamespace(os.Getpid())
	dial := op{"connect", "unix " + sock}
	t.Run("off", func(t *testing.T) {
		r := runPlain(t, dial)
		wantOK(t, r, dial.Do+dial.Arg)
		if got := <-peers; got.userNS != self {
			t.Errorf("unconfined peer %d in user namespace %q, not the daemon's %q", got.pid, got.userNS, self)
		}
	})
	t.Run("on", func(t *testing.T) {
		requireKernel(t, 1, false)
		wantErr(t, runConfined(t, f.policy, dial), dial.Do+dial.Arg, syscall.EACCES)
	})
	t.Run("on-unix-sockets-allowed", func(t *testing.T) {
		requireKernel(t, 1, true)
		p := f.policy
		p.UnixSockets = true
		c, err := startConfined(t, p, dial)
		if err != nil {
			t.Fatal(err)
		}
		if f.kernel.Landlock >= 9 {
			wantErr(t, c.wait(t), dial.Do+dial.Arg, syscall.EACCES)
			return
		}
		got := <-peers
		r := c.wait(t)
		wantOK(t, r, dial.Do+dial.Arg) // the hole below ABI 9
		if got.pid != c.cmd.Process.Pid {
			t.Errorf("peer pid %d, want the child's %d", got.pid, c.cmd.Process.Pid)
		}
		if got.userNS == "" || got.userNS == self {
			t.Errorf("the peer's user namespace is %q, the daemon's %q: a confined peer must be told apart", got.userNS, self)
		}
	})
}

// TestSysVIPC: a confined child has an IPC namespace of its own: it does
// not see the daemon's user's System V shared memory.
func TestSysVIPC(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	key := 0x6d637078 ^ os.Getpid() // "mcpx"
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	shm := op{"shm", strconv.Itoa(key)}
	t.Run("off", func(t *testing.T) {
		wantOK(t, runPlain(t, shm), shm.Do+shm.Arg)
	})
	t.Run("on", func(t *testing.T) {
		requireKernel(t, 1, true)
		wantErr(t, runConfined(t, f.policy, shm), shm.Do+shm.Arg, syscall.ENOENT)
	})
}

// TestUserNamespace: a confined child lives in a user namespace of its
// own, on a private network or on the host's; an unconfined one shares
// the daemon's.
func TestUserNamespace(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	self := userNamespace(os.Getpid())
	userns := op{"userns", ""}
	t.Run("off", func(t *testing.T) {
		if got := runPlain(t, userns).get(t, "userns").Out; got != self {
			t.Errorf("unconfined child's user namespace %q, want the daemon's %q", got, self)
		}
	})
	for _, network := range []sandbox.Network{sandbox.NetworkNone, sandbox.NetworkAll} {
		t.Run("on-"+string(network), func(t *testing.T) {
			requireKernel(t, 1, true)
			p := f.policy
			p.Network = network
			got := runConfined(t, p, userns).get(t, "userns").Out
			if got == "" || got == self {
				t.Errorf("confined child's user namespace %q; want another than the daemon's %q", got, self)
			}
		})
	}
}

// TestCapabilities: a confined child holds no capability and cannot gain
// one; unconfined, as root, it holds them all.
func TestCapabilities(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	status := op{"status", ""}
	t.Run("off", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("unconfined, only root holds capabilities")
		}
		if eff := statusField(runPlain(t, status).get(t, "status").Out, "CapEff"); eff == "0000000000000000" {
			t.Errorf("unconfined root child: CapEff %s", eff)
		}
	})
	t.Run("on", func(t *testing.T) {
		requireKernel(t, 1, false)
		out := runConfined(t, f.policy, status).get(t, "status").Out
		for _, field := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if v := statusField(out, field); v != "0000000000000000" {
				t.Errorf("confined child: %s %q, want none", field, v)
			}
		}
		if v := statusField(out, "NoNewPrivs"); v != "1" {
			t.Errorf("confined child: NoNewPrivs %q, want 1", v)
		}
	})
}

func statusField(status, name string) string {
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
