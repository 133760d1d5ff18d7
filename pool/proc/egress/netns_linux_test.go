package egress_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/proc/egress"
)

// netnsChildEnv, set, makes the test binary the confined child of
// TestListenerFromChildNetns: its value is "direct-addr proxy-target".
const netnsChildEnv = "EGRESS_TEST_NETNS_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(netnsChildEnv); v != "" {
		os.Exit(netnsChild(v))
	}
	os.Exit(m.Run())
}

// TestListenerFromChildNetns serves the way the daemon will: the listener
// is created on the loopback of a child's own network namespace and passed
// to the proxy over a unix socket. The child reaches the allowed host
// through it, and cannot reach the host directly.
func TestListenerFromChildNetns(t *testing.T) {
	proctest.CheckNoLeaks(t)
	h := tcpHost(t, "127.0.0.2:0")
	_, hp, _ := net.SplitHostPort(h.Addr().String())
	p, l := newProxy(t, egress.Options{})

	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "ours"), os.NewFile(uintptr(pair[1]), "theirs")
	defer ours.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), netnsChildEnv+"="+h.Addr().String()+" api.example.test:"+hp, proctest.Env(t))
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		theirs.Close()
		msg := fmt.Sprintf("starting a child in new user and network namespaces: %v (the kernel must allow unprivileged user namespaces)", err)
		if os.Getenv(testenv.RequireDepsEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	theirs.Close()

	ln, err := receiveListener(ours)
	if err != nil {
		cmd.Wait()
		t.Fatalf("receiving the child's listener: %v\nchild:\n%s", err, &out)
	}
	s, err := p.Serve(ln, gh("api.example.test:"+hp))
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, &out)
	}
	got := out.String()
	t.Logf("child:\n%s", got)
	if !strings.Contains(got, "direct: connect: connection refused") {
		t.Errorf("the child's direct connection to %s was not refused:\n%s", h.Addr(), got)
	}
	if !strings.Contains(got, "proxy: echo:ping") {
		t.Errorf("the child did not reach the host through the proxy:\n%s", got)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if recs := l.records("egress connected"); len(recs) != 1 {
		t.Errorf("connections logged: %v", recs)
	}
}

// receiveListener reads one listening socket's descriptor from the unix
// socket f (SCM_RIGHTS).
func receiveListener(f *os.File) (net.Listener, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	uc.SetReadDeadline(time.Now().Add(time.Minute))
	buf, oob := make([]byte, 64), make([]byte, syscall.CmsgSpace(4))
	_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("no descriptor received (%v)", err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("no descriptor received (%v)", err)
	}
	lf := os.NewFile(uintptr(fds[0]), "child listener")
	defer lf.Close() // FileListener holds a duplicate
	return net.FileListener(lf)
}

// netnsChild runs in the child's namespaces: it brings lo up, listens on
// 127.0.0.1, passes the listener to the parent on fd 3, then tries the host
// directly and through the proxy, printing what happened.
func netnsChild(arg string) int {
	direct, target, _ := strings.Cut(arg, " ")
	if err := loUp(); err != nil {
		fmt.Println("bringing lo up:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	parent, err := net.FileConn(os.NewFile(3, "parent"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if _, _, err := parent.(*net.UnixConn).WriteMsgUnix([]byte("listener"), syscall.UnixRights(int(lf.Fd())), nil); err != nil {
		fmt.Println(err)
		return 1
	}
	lf.Close()
	parent.Close()
	proxy := ln.Addr().String()
	ln.Close() // the parent's copy listens on

	if c, err := net.DialTimeout("tcp", direct, 10*time.Second); err != nil {
		var se *os.SyscallError
		if errors.As(err, &se) {
			err = se
		}
		fmt.Println("direct:", err)
	} else {
		c.Close()
		fmt.Println("direct: connected")
	}

	c, err := net.DialTimeout("tcp", proxy, 10*time.Second)
	if err != nil {
		fmt.Println("proxy:", err)
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		fmt.Println("proxy:", resp, err)
		return 0
	}
	io.WriteString(c, "ping")
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(br)
	fmt.Printf("proxy: %s %v\n", got, err)
	return 0
}

// loUp brings the loopback interface up, as the sandbox's helper does in
// a fresh network namespace (its user namespace gives it CAP_NET_ADMIN).
func loUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(ifr.name[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return e
	}
	ifr.flags |= syscall.IFF_UP
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return e
	}
	return nil
}
