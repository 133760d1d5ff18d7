package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"mcpx.dev/mcpx/api"
)

// Adopt serves the listening sockets h hands over: the unix socket at
// sock, served with opts, and, if addr is not "", the loopback TCP
// listener, served with at most maxConns connections. A socket h does not
// hold is opened as Local opens it. It returns the TCP listener (nil
// without addr).
func (s *Listeners) Adopt(h *Handoff, sock, addr string, opts api.ServeOptions, maxConns int) (net.Listener, error) {
	uln, err := handedListener(h, "unix", sock)
	if err != nil {
		return nil, err
	}
	if uln == nil {
		if uln, err = api.ListenUnix(sock); err != nil {
			return nil, err
		}
	}
	s.Add(uln, opts)
	s.list[len(s.list)-1].inherited = inheritedConns(h, uln.Addr().String())
	if addr == "" {
		return nil, nil
	}
	tln, err := handedListener(h, "tcp", "")
	if err != nil {
		return nil, err
	}
	if tln == nil {
		if tln, err = api.ListenLoopback(addr); err != nil {
			return nil, fmt.Errorf("--listen: %w", err)
		}
	}
	opts.MaxConns = maxConns
	s.Add(tln, opts)
	s.list[len(s.list)-1].inherited = inheritedConns(h, tln.Addr().String())
	return tln, nil
}

// handedListener is the listener of network (at addr, for unix) that h
// hands over, nil if none.
func handedListener(h *Handoff, network, addr string) (net.Listener, error) {
	for _, hl := range h.Listeners {
		if hl.Network != network || (addr != "" && hl.Addr != addr) {
			continue
		}
		f := os.NewFile(uintptr(hl.FD), hl.Addr)
		ln, err := net.FileListener(f) // a duplicate: f is ours to close
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("serving the handed-over %s listener %s: %w", network, hl.Addr, err)
		}
		if u, ok := ln.(*net.UnixListener); ok {
			u.SetUnlinkOnClose(true) // as the listener ListenUnix made would
		}
		return ln, nil
	}
	return nil, nil
}

// handable is a listener whose socket can be kept open across an exec.
type handable interface {
	net.Listener
	SetDeadline(time.Time) error
	File() (*os.File, error)
}

// kept wraps a served listener: once keep is set (an upgrade), Close stops
// Accept without closing the socket, so that connections arriving while
// the daemon drains and re-executes wait in the kernel's backlog for the
// next image, and are never refused; and the idle keep-alive connections
// the drain would close are kept too, for the next image to serve
// (keptConn). Accept yields first the connections a predecessor handed
// over.
type kept struct {
	net.Listener
	keep   *atomic.Bool
	closed atomic.Bool

	mu        sync.Mutex
	inherited []net.Conn             // guarded by mu: handed over by the predecessor, not yet accepted
	conns     map[*keptConn]struct{} // guarded by mu: open connections
}

func keepable(ln net.Listener, keep *atomic.Bool, inherited []net.Conn) net.Listener {
	if _, ok := ln.(handable); !ok {
		return ln // a tailnet listener: it cannot be handed over
	}
	return &kept{Listener: ln, keep: keep, inherited: inherited, conns: map[*keptConn]struct{}{}}
}

func (k *kept) Accept() (net.Conn, error) {
	if k.closed.Load() {
		return nil, net.ErrClosed
	}
	k.mu.Lock()
	if n := len(k.inherited); n > 0 {
		c := k.inherited[0]
		k.inherited = k.inherited[1:]
		k.mu.Unlock()
		return k.track(c), nil
	}
	k.mu.Unlock()
	c, err := k.Listener.Accept()
	if err != nil && k.closed.Load() {
		return nil, net.ErrClosed
	}
	if err != nil {
		return nil, err
	}
	return k.track(c), nil
}

func (k *kept) track(c net.Conn) net.Conn {
	kc := &keptConn{Conn: c, k: k}
	k.mu.Lock()
	k.conns[kc] = struct{}{}
	k.mu.Unlock()
	return kc
}

func (k *kept) Close() error {
	if !k.keep.Load() {
		return k.Listener.Close()
	}
	if k.closed.Swap(true) {
		return nil
	}
	// Wake the Accept under way; the socket stays open.
	return k.Listener.(handable).SetDeadline(time.Unix(1, 0))
}

// uncapped is l's options, saying "no cap" for a unix socket outright:
// api.Serve knows one by its type, which the kept wrapper hides.
func uncapped(l listener) api.ServeOptions {
	if _, ok := l.ln.(*net.UnixListener); ok {
		l.opts.MaxConns = -1
	}
	return l.opts
}

// inheritable is ln's descriptor with close-on-exec cleared, read without
// putting the socket in blocking mode.
func inheritable(ln net.Listener) (int, error) {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return 0, fmt.Errorf("listener %s has no descriptor", ln.Addr())
	}
	return inheritFD(sc)
}

// inheritFD clears close-on-exec on c's descriptor and returns it.
func inheritFD(c syscall.Conn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	fd, ferr := -1, error(nil)
	if err := rc.Control(func(u uintptr) {
		fd = int(u)
		_, ferr = unix.FcntlInt(u, unix.F_SETFD, 0)
	}); err != nil {
		return 0, err
	}
	return fd, ferr
}

// handOver lists the listeners that can be handed over, and their idle
// connections, with their descriptors made to survive the exec
// (close-on-exec cleared). Call it after the actors returned (with keep
// set, they left the sockets open); it waits, up to wait, for connections
// still being answered.
func (s *Listeners) handOver(wait time.Duration) ([]HandedListener, []HandedConn, error) {
	var out []HandedListener
	var conns []HandedConn
	for _, l := range s.list {
		if k, ok := l.served.(*kept); ok {
			conns = append(conns, k.handConns(l.ln.Addr().String(), wait)...)
		}
		if _, ok := l.ln.(handable); !ok {
			continue
		}
		fd, err := inheritable(l.ln)
		if err != nil {
			return nil, nil, err
		}
		network := "tcp"
		if u, ok := l.ln.(*net.UnixListener); ok {
			network = "unix"
			u.SetUnlinkOnClose(false) // the next image serves the same path
		}
		out = append(out, HandedListener{Network: network, Addr: l.ln.Addr().String(), FD: fd})
	}
	if len(out) == 0 {
		return nil, nil, errors.New("no listener to hand over")
	}
	return out, conns, nil
}

// closeKept closes the listeners an upgrade kept open, when it did not
// exec after all.
func (s *Listeners) closeKept() {
	for _, l := range s.list {
		l.ln.Close()
	}
}
