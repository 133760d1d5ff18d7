package daemon

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// HTTP/1.1 keep-alive meets an upgrade: the drain closes the connections
// that are idle between two requests, and a client that sends its next
// request just then sees the connection close with no answer (the server
// never read it), which it must not retry unless the request is
// idempotent. So an idle connection is not closed but handed over: the
// old image stops reading it (a read deadline, with nothing consumed),
// keeps the socket open across the exec, and the new image serves it as a
// fresh connection; a request the client sent meanwhile waits in the
// socket. A connection that read anything since its last answer is
// answered here first.

// keptConn is a connection of a kept listener.
type keptConn struct {
	net.Conn
	k *kept

	mu       sync.Mutex
	since    []byte // guarded by mu: what was read since the last write (up to maxUnanswered)
	overflow bool   // guarded by mu: since overflowed
	prefix   []byte // guarded by mu: what was read for the next image (handed)
	carry    []byte // guarded by mu: the byte of net/http's background read, not yet followed by a read
	reading  bool   // guarded by mu: a Read is under way
	handed   bool   // guarded by mu: kept for the next image
	closed   bool   // guarded by mu
	settled  sync.Cond
	condOnce sync.Once
}

// NetConn is the connection underneath (api.ConnContext reads the peer's
// credentials from it).
func (c *keptConn) NetConn() net.Conn { return c.Conn }

func (c *keptConn) cond() *sync.Cond {
	c.condOnce.Do(func() { c.settled.L = &c.mu })
	return &c.settled
}

func (c *keptConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	if c.handed || c.closed {
		c.mu.Unlock()
		return 0, os.ErrDeadlineExceeded
	}
	boundary := len(c.since) == 0 && !c.overflow // between two requests
	c.reading = true
	c.mu.Unlock()
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.cond().Broadcast()
	c.reading = false
	switch {
	case n == 1 && len(b) == 1:
		// net/http's background read, which it makes once a request
		// is read whole: the first byte of the next request, which
		// the server hands itself before it reads on.
		c.carry, c.since, c.overflow = b[:1:1], c.since[:0], false
		return n, err
	case n > 0 && boundary && c.k.keep.Load():
		// The next request, arriving as the daemon drains: the old
		// image would drop it (a server shutting down closes a
		// connection on which it reads a request); the next one
		// answers it, from these bytes on.
		c.prefix = append(append(c.prefix, c.carry...), b[:n]...)
		c.carry, c.handed = nil, true
		return 0, os.ErrDeadlineExceeded
	case n > 0 && c.handed:
		// Half a request, after the drain timed out: it is lost.
		c.handed, c.closed = false, true
		c.Conn.Close()
	}
	if len(c.since)+len(c.carry)+n > maxUnanswered {
		c.overflow, c.since = true, c.since[:0]
	} else if !c.overflow {
		c.since = append(append(c.since, c.carry...), b[:n]...)
	}
	c.carry = nil
	return n, err
}

// maxUnanswered bounds what a connection keeps of a request it has not
// answered yet, to hand it over if the old image drops it.
const maxUnanswered = 1 << 20

func (c *keptConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.mu.Lock()
	c.since, c.overflow = c.since[:0], false
	c.mu.Unlock()
	return n, err
}

// Close closes the connection, unless an upgrade is under way: then it is
// kept for the next image, and the Read under way is woken with a
// deadline. What it read since its last answer is a request the old
// image read and dropped unanswered (net/http closes a connection on
// which it reads a request once it is shutting down): the next image
// reads it first. One whose last answer said Connection: close is kept
// too: its client closes it, and the next image reads the end.
func (c *keptConn) Close() error {
	c.mu.Lock()
	if c.closed || c.handed {
		c.mu.Unlock()
		return nil
	}
	if c.k.keep.Load() && !c.overflow {
		c.handed = true
		c.prefix = append(append(c.prefix, c.since...), c.carry...)
		c.since, c.carry = nil, nil
		c.mu.Unlock()
		return c.Conn.SetReadDeadline(time.Unix(1, 0))
	}
	c.closed = true
	c.mu.Unlock()
	c.k.mu.Lock()
	delete(c.k.conns, c)
	c.k.mu.Unlock()
	return c.Conn.Close()
}

// handOver waits (until deadline) for c's Read to return and reports
// whether c is kept for the next image, with its descriptor made to
// survive the exec; one that is not is closed or being answered.
func (c *keptConn) handOver(deadline time.Time) (int, []byte, bool) {
	c.mu.Lock()
	for c.reading && time.Now().Before(deadline) {
		c.mu.Unlock()
		time.Sleep(time.Millisecond)
		c.mu.Lock()
	}
	ok := c.handed && !c.reading
	prefix := c.prefix
	c.mu.Unlock()
	if !ok {
		return 0, nil, false
	}
	sc, isConn := c.Conn.(syscall.Conn)
	if !isConn {
		return 0, nil, false
	}
	fd, err := inheritFD(sc)
	return fd, prefix, err == nil
}

// handConns lists k's connections kept for the next image; it waits for
// those being answered still (bounded by wait), so that none is cut by
// the exec.
func (k *kept) handConns(addr string, wait time.Duration) []HandedConn {
	deadline := time.Now().Add(wait)
	var out []HandedConn
	for {
		k.mu.Lock()
		conns := make([]*keptConn, 0, len(k.conns))
		for c := range k.conns {
			conns = append(conns, c)
		}
		k.mu.Unlock()
		busy := 0
		out = out[:0]
		for _, c := range conns {
			if fd, prefix, ok := c.handOver(deadline); ok {
				out = append(out, HandedConn{Listener: addr, FD: fd, Prefix: prefix})
			} else {
				busy++
			}
		}
		if busy == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// HandedConn is one idle connection kept open across the exec, served by
// the next image on the listener at Listener.
type HandedConn struct {
	Listener string `json:"listener"`
	FD       int    `json:"fd"`
	// Prefix is what the old image read of the next request: the new
	// one reads it first.
	Prefix []byte `json:"prefix,omitempty"`
}

// inheritedConns are the connections h hands over for the listener at addr.
func inheritedConns(h *Handoff, addr string) []net.Conn {
	var out []net.Conn
	for _, hc := range h.Conns {
		if hc.Listener != addr {
			continue
		}
		f := os.NewFile(uintptr(hc.FD), "conn")
		c, err := net.FileConn(f) // a duplicate: f is ours to close
		f.Close()
		if err == nil {
			out = append(out, &prefixConn{Conn: c, prefix: hc.Prefix})
		}
	}
	return out
}

// prefixConn reads prefix before what is left in the socket.
type prefixConn struct {
	net.Conn
	prefix []byte // used only by Read, which the server calls from one goroutine at a time
}

func (c *prefixConn) NetConn() net.Conn { return c.Conn }

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// SyscallConn is the socket's, for a handoff at the next upgrade.
func (c *prefixConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok || len(c.prefix) > 0 {
		return nil, errors.New("connection cannot be handed over")
	}
	return sc.SyscallConn()
}
