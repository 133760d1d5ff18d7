// Package portalloc hands out TCP ports from configured ranges to pooled
// instances, and keeps each one out of everybody else's hands until the
// child that will listen on it starts.
//
//	a := portalloc.New()
//	h, err := a.Take("demo-3", 9222, 9299) // lowest port free here and on the host
//	// ... substitute h.Port() into the child's args, then just before exec:
//	h.Unbind()
//	// ... when the instance stops, after its child has exited:
//	h.Release()
//
// A successor that takes over a running child (one listening on its port
// already) claims the port instead: Claim records it as held without
// binding it.
//
// # The check-then-use gap
//
// Asking the kernel whether a port is free and later starting a child that
// binds it leaves a gap in which another process may take it. Take closes
// the gap on our side: it binds the port (a listening socket on 127.0.0.1,
// and on ::1 where the host has IPv6 loopback) and holds it until Unbind,
// which the pool calls just before it execs the child. A port someone else
// holds on either loopback address, or on a wildcard address, cannot be
// bound and is skipped. The Allocator's own table keeps a port taken from
// Take to Release, whether or not it is bound, so two live owners (of one
// range or of overlapping ranges) never share one.
//
// What remains is the window between Unbind and the child's own bind: the
// fork, the exec and the child's start-up. Only a process outside mcpx that
// binds that very port in that window can take it; the child then fails to
// listen, which is a start failure like any other. Passing the bound socket
// to the child (systemd-style fd passing) would close it, but few servers
// accept one.
//
// The wildcard addresses are not held: a listener there would be reachable
// from the network for as long as it is held. A child that binds 0.0.0.0
// still conflicts with a foreign listener on a specific non-loopback
// address, which this package does not see.
package portalloc

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
)

// ErrExhausted: every port of the range is taken, by an owner here or by
// another process.
var ErrExhausted = errors.New("no free port in the range")

// ErrHeld: the port Claim asked for is held by an owner here.
var ErrHeld = errors.New("the port is held by another owner")

// Allocator is safe for concurrent use. The zero value is not usable; call New.
type Allocator struct {
	// listen binds one address; tests replace it. Constant after New.
	listen func(network, addr string) (net.Listener, error)

	mu    sync.Mutex
	taken map[int]*Hold // guarded by mu: from Take to Release
}

// New returns an allocator that has handed out nothing.
func New() *Allocator {
	return &Allocator{listen: net.Listen, taken: map[int]*Hold{}}
}

// Hold is one port taken by one owner. Its methods are safe for concurrent use.
type Hold struct {
	a     *Allocator
	port  int
	owner string // for Owner

	mu   sync.Mutex
	lns  []net.Listener // guarded by mu; bound while held
	done bool           // guarded by mu; released
}

// Take gives owner the lowest port in [lo, hi] that no live Hold has and
// that can be bound on the loopback addresses, bound. A port that is free
// again (its Hold released) is handed out again. The error wraps
// ErrExhausted when there is none.
func (a *Allocator) Take(owner string, lo, hi int) (*Hold, error) {
	if lo < 1 || hi > 65535 || lo > hi {
		return nil, fmt.Errorf("bad port range [%d, %d]: want 1 <= low <= high <= 65535", lo, hi)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	busy := 0
	for port := lo; port <= hi; port++ {
		if _, ok := a.taken[port]; ok {
			continue
		}
		lns, err := a.bind(port)
		if err != nil {
			busy++
			continue
		}
		h := &Hold{a: a, port: port, owner: owner, lns: lns}
		a.taken[port] = h
		return h, nil
	}
	n := hi - lo + 1
	return nil, fmt.Errorf("%w [%d, %d]: %d of %d held by other instances, %d by other processes", ErrExhausted, lo, hi, n-busy, n, busy)
}

// Claim gives owner port without binding it: the child that listens on it
// is already running (one a predecessor handed over). The Hold is
// released as a taken one is, and Rebind binds it for a restart. The
// error wraps ErrHeld when an owner here holds the port.
func (a *Allocator) Claim(owner string, port int) (*Hold, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("bad port %d: want 1 <= port <= 65535", port)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if h, ok := a.taken[port]; ok {
		return nil, fmt.Errorf("%w: port %d is held by %s", ErrHeld, port, h.owner)
	}
	h := &Hold{a: a, port: port, owner: owner}
	a.taken[port] = h
	return h, nil
}

// bind listens on port on the loopback addresses: 127.0.0.1 always, ::1
// when the host has it.
func (a *Allocator) bind(port int) ([]net.Listener, error) {
	p := strconv.Itoa(port)
	ln4, err := a.listen("tcp4", "127.0.0.1:"+p)
	if err != nil {
		return nil, err
	}
	ln6, err := a.listen("tcp6", "[::1]:"+p)
	switch {
	case err == nil:
		return []net.Listener{ln4, ln6}, nil
	case noIPv6(err):
		return []net.Listener{ln4}, nil
	}
	ln4.Close()
	return nil, err
}

// noIPv6 reports whether err says the host has no IPv6 loopback, as
// opposed to the port being in use there.
func noIPv6(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EPROTONOSUPPORT)
}

// Port is the port held.
func (h *Hold) Port() int { return h.port }

// Unbind closes the sockets that hold the port, so a child can bind it; the
// port stays h's in the allocator's table. The pool calls it just before it
// execs the child. Unbinding twice is harmless.
func (h *Hold) Unbind() {
	h.mu.Lock()
	defer h.mu.Unlock()
	closeAll(h.lns)
	h.lns = nil
}

// Rebind binds the port again before a restart: an error means another
// process took it while no child of h's owner held it.
func (h *Hold) Rebind() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return fmt.Errorf("port %d was released", h.port)
	}
	if h.lns != nil {
		return nil
	}
	lns, err := h.a.bind(h.port)
	if err != nil {
		return fmt.Errorf("port %d is now in use by another process: %w", h.port, err)
	}
	h.lns = lns
	return nil
}

// Release unbinds the port and gives it back: Take may hand it out again.
// Call it once the child that used it has exited. Releasing twice is harmless.
func (h *Hold) Release() {
	h.mu.Lock()
	closeAll(h.lns)
	h.lns = nil
	done := h.done
	h.done = true
	h.mu.Unlock()
	if done {
		return
	}
	h.a.mu.Lock()
	if h.a.taken[h.port] == h {
		delete(h.a.taken, h.port)
	}
	h.a.mu.Unlock()
}

// Owner is who took the port, as Take or Claim was told.
func (h *Hold) Owner() string { return h.owner }

// Taken lists the ports handed out and not yet released, in order.
func (a *Allocator) Taken() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]int, 0, len(a.taken))
	for p := range a.taken {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		ln.Close()
	}
}
