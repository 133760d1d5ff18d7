package egress

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// listener admits a binding's child connections up to Options.MaxConns and
// tracks each, so that closing the binding closes them.
type listener struct {
	net.Listener
	s *Served
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc, ok := l.s.track(c, true); ok {
			return tc, nil
		}
	}
}

// track records c as one of the binding's connections, a child's (client)
// or an upstream. It closes c and returns false when the binding is closed
// or, for a client, when the binding has MaxConns already (answering 503).
func (s *Served) track(c net.Conn, client bool) (*trackedConn, bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return nil, false
	}
	if client && s.clients >= s.p.opts.MaxConns {
		s.mu.Unlock()
		s.refuseConn(c)
		return nil, false
	}
	tc := &trackedConn{Conn: c, s: s, client: client}
	s.conns[tc] = struct{}{}
	if client {
		s.clients++
	}
	s.mu.Unlock()
	return tc, true
}

// refuseConn answers a connection over the limit and closes it.
func (s *Served) refuseConn(c net.Conn) {
	why := fmt.Sprintf("connection limit reached (%d at once)", s.p.opts.MaxConns)
	s.counts.refused.Add(1)
	s.logRefusal("", "why", why)
	body := "mcpx egress (server " + s.b.Server + "): " + why + "\n"
	c.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c.Close()
}

func (s *Served) untrack(tc *trackedConn) {
	s.mu.Lock()
	if _, ok := s.conns[tc]; ok {
		delete(s.conns, tc)
		if tc.client {
			s.clients--
		}
	}
	s.mu.Unlock()
}

// trackedConn is a connection the binding closes when it closes.
type trackedConn struct {
	net.Conn
	s      *Served
	client bool
	once   sync.Once
}

func (c *trackedConn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		c.s.untrack(c)
		err = c.Conn.Close()
	})
	return err
}

// CloseWrite half-closes a TCP connection (the tunnel passes on one side's
// end of data to the other), or closes one that cannot be half-closed.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}
