package egress

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// connect serves CONNECT host:port: what HTTPS_PROXY clients send (curl,
// node's undici, Go, Python requests). RFC 9110, section 9.3.6: the proxy
// opens a TCP connection to the target and relays bytes both ways, and a
// 2xx answer means the tunnel is up.
func (s *Served) connect(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close") // a refused CONNECT ends the connection
	host, portStr, err := net.SplitHostPort(r.Host)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil {
		s.refuse(w, &Refusal{Host: r.Host, Why: "CONNECT names host:port"}, http.StatusBadRequest)
		return
	}
	// Not r.Context(): net/http cancels it when the child half-closes,
	// and a child may send its first bytes and its end before the tunnel
	// is up.
	up := s.open(s.ctx, w, host, port)
	if up == nil {
		return
	}
	defer up.Close()
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.failed(w, host, port, err)
		return
	}
	defer client.Close()
	client.SetDeadline(time.Time{}) // net/http's header and idle deadlines
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the child sent right behind its CONNECT (a TLS hello, say)
	// are in net/http's reader already.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	s.tunnel(client, up)
}

// tunnel relays bytes between a child and its upstream until both sides
// have ended, either fails, or the tunnel is idle for IdleTimeout; then it
// closes both. It returns when both directions have stopped.
func (s *Served) tunnel(client, up net.Conn) {
	s.wg.Add(1)
	relay(client, up, s.p.opts.IdleTimeout, s.wg.Done)
}

// relay is tunnel, the direction from the child running in a goroutine of
// its own that calls done as it ends.
func relay(client, up net.Conn, idle time.Duration, done func()) {
	t := &tunnel{idle: idle}
	t.touch()
	fromChild := make(chan struct{})
	go func() {
		defer done()
		defer close(fromChild)
		t.pipe(up, client)
	}()
	t.pipe(client, up)
	<-fromChild
	client.Close()
	up.Close()
}

// tunnel is the state the two directions of a tunnel share.
type tunnel struct {
	idle time.Duration
	last atomic.Int64 // time.Now().UnixNano() of the last byte either way
}

func (t *tunnel) touch() { t.last.Store(time.Now().UnixNano()) }

// quiet reports whether no byte has crossed either way for idle.
func (t *tunnel) quiet() bool {
	return time.Since(time.Unix(0, t.last.Load())) >= t.idle
}

// pipe copies src to dst. At src's end of data it half-closes dst, so the
// other direction can finish; on an error, or when the whole tunnel has
// been quiet for idle, it closes both, which stops the other direction too.
// Deadlines are moved only when half spent: setting one costs more than
// reading 64 KiB from loopback.
func (t *tunnel) pipe(dst, src net.Conn) {
	buf := make([]byte, 64<<10)
	var readBy, writeBy time.Time
	for {
		if now := time.Now(); readBy.Sub(now) < t.idle/2 {
			readBy = now.Add(t.idle)
			src.SetReadDeadline(readBy)
		}
		n, err := src.Read(buf)
		if n > 0 {
			t.touch()
			if now := time.Now(); writeBy.Sub(now) < t.idle/2 {
				writeBy = now.Add(t.idle)
				dst.SetWriteDeadline(writeBy)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				dst.Close()
				return
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			closeWrite(dst)
			return
		case isTimeout(err) && !t.quiet(): // the other direction is busy
		default:
			src.Close()
			dst.Close()
			return
		}
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
