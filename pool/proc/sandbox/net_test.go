//go:build linux

package sandbox_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// listen listens on addr for the test's lifetime, accepting and closing
// every connection.
func listen(t *testing.T, addr string) *net.TCPAddr {
	t.Helper()
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr)
}

func wantErr(t *testing.T, r run, key string, want error) {
	t.Helper()
	res := r.get(t, key)
	if !strings.Contains(res.Err, want.Error()) {
		t.Errorf("%s: err %q; want %q", key, res.Err, want)
	}
}

func wantOK(t *testing.T, r run, key string) {
	t.Helper()
	if res := r.get(t, key); res.Err != "" {
		t.Errorf("%s: %s", key, res.Err)
	}
}

// TestLoopbackPorts: on the host's network with Landlock's TCP rules, a
// confined child connects to the port it was given and to no other, by
// TCP or by Multipath TCP (refused by the seccomp filter; Landlock's rules
// do not cover it). It does reach another address on its own port: the
// rules name ports, not addresses — what NetworkProxy's namespace closes.
func TestLoopbackPorts(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	allowed := listen(t, "127.0.0.1:0")
	forbidden := listen(t, "127.0.0.1:0")
	sameport := listen(t, fmt.Sprintf("127.0.0.2:%d", allowed.Port))
	toAllowed, toForbidden := "tcp "+allowed.String(), "tcp "+forbidden.String()
	mptcp, toSamePort := "mptcp "+forbidden.String(), "tcp "+sameport.String()
	ops := []op{{"connect", toAllowed}, {"connect", toForbidden}, {"connect", mptcp}, {"connect", toSamePort}}
	t.Run("off", func(t *testing.T) {
		r := runPlain(t, ops...)
		for _, o := range ops {
			wantOK(t, r, o.Do+o.Arg)
		}
	})
	p := f.policy
	p.Network, p.ConnectTCP = sandbox.NetworkLoopback, []uint16{uint16(allowed.Port)}
	t.Run("on", func(t *testing.T) {
		requireKernel(t, 4, false)
		r := runConfined(t, p, ops...)
		wantOK(t, r, "connect"+toAllowed)
		wantErr(t, r, "connect"+toForbidden, syscall.EACCES)
		wantErr(t, r, "connect"+mptcp, syscall.EPROTONOSUPPORT)
		wantOK(t, r, "connect"+toSamePort) // the hole a network namespace closes
	})
	t.Run("landlock-alone", func(t *testing.T) {
		requireKernel(t, 4, false)
		sandbox.WithoutMPTCPFilter(t)
		r := runConfined(t, p, ops...)
		wantErr(t, r, "connect"+toForbidden, syscall.EACCES)
		if res := r.get(t, "connect"+mptcp); res.Err == "" {
			t.Logf("Landlock ABI %d alone lets Multipath TCP reach the forbidden port %d: the seccomp filter is what refuses it", f.kernel.Landlock, forbidden.Port)
		} else {
			t.Logf("Landlock ABI %d alone refuses Multipath TCP here: %s", f.kernel.Landlock, res.Err)
		}
	})
}

// TestPrivateNetwork: in a network namespace of its own the child reaches
// nothing of the host's, on loopback or on any other address, and its own
// loopback is up.
func TestPrivateNetwork(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	host := listen(t, "0.0.0.0:0")
	targets := []string{fmt.Sprintf("tcp 127.0.0.1:%d", host.Port)}
	if ip := hostIP(); ip != "" {
		targets = append(targets, fmt.Sprintf("tcp %s:%d", ip, host.Port))
	}
	ops := []op{{"listen-self", ""}}
	for _, a := range targets {
		ops = append(ops, op{"connect", a})
	}
	t.Run("off", func(t *testing.T) {
		r := runPlain(t, ops...)
		for _, o := range ops {
			wantOK(t, r, o.Do+o.Arg)
		}
	})
	on := func(t *testing.T) {
		requireKernel(t, 1, true)
		r := runConfined(t, f.policy, ops...)
		wantOK(t, r, "listen-self")
		wantErr(t, r, "connect"+targets[0], syscall.ECONNREFUSED)
		for _, a := range targets[1:] {
			wantErr(t, r, "connect"+a, syscall.ENETUNREACH)
		}
	}
	t.Run("on", on)
	// Without unshare the helper is cloned into its namespaces, and
	// keeps CAP_NET_ADMIN there (ambient) to bring lo up.
	t.Run("on, cloned", func(t *testing.T) {
		sandbox.WithNamespaceStage(t, "")
		on(t)
	})
}

// hostIP returns an IPv4 address of this host other than loopback, "" if
// it has none.
func hostIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// TestProxyNetwork: under NetworkProxy the child's one way out is the
// listener the helper made on its own 127.0.0.1:ProxyPort, which the
// daemon accepts on; 127.0.0.2 on the same port, where the host has a
// listener, is refused; the child holds no copy of the listener. Closing
// the Cell closes the listener.
func TestProxyNetwork(t *testing.T) {
	proctest.CheckNoLeaks(t)
	f := newFixture(t)
	decoy := listen(t, "127.0.0.2:0") // the host's, on the proxy's port number
	port := decoy.Port
	toProxy, toDecoy := fmt.Sprintf("tcp 127.0.0.1:%d", port), fmt.Sprintf("tcp 127.0.0.2:%d", port)
	t.Run("off", func(t *testing.T) {
		r := runPlain(t, op{"connect", toDecoy})
		wantOK(t, r, "connect"+toDecoy)
	})
	t.Run("on", func(t *testing.T) {
		requireKernel(t, 1, true)
		p := f.policy
		p.Network, p.ProxyPort = sandbox.NetworkProxy, uint16(port)
		c, err := startConfined(t, p, op{"connect", toProxy}, op{"connect", toDecoy}, op{"fds", ""})
		if err != nil {
			t.Fatal(err)
		}
		l := c.cell.Listener()
		if l == nil {
			t.Fatal("no proxy listener")
		}
		got := make(chan string, 1)
		go func() {
			conn, err := l.Accept()
			if err != nil {
				got <- err.Error()
				return
			}
			defer conn.Close()
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil {
				line = err.Error()
			}
			got <- line
		}()
		if line := <-got; line != "hello\n" {
			t.Errorf("the proxy listener read %q, want hello", line)
		}
		r := c.wait(t)
		wantOK(t, r, "connect"+toProxy)
		wantErr(t, r, "connect"+toDecoy, syscall.ECONNREFUSED)
		if fds := r.get(t, "fds").Out; strings.Contains(fds, "socket:") {
			t.Errorf("the child holds a socket it did not make:\n%s", fds)
		}
		if _, err := l.Accept(); err == nil {
			t.Error("the listener accepts after Close")
		}
	})
}
