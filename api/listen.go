package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"mcpx.dev/mcpx/broker"
)

// ErrSocketInUse is returned (wrapped) by ListenUnix when another process
// answers on the socket path.
var ErrSocketInUse = errors.New("another process is serving on the socket")

// ListenUnix listens on a unix socket at path that only its owner can
// connect to: the socket is chmod 0600 after listening (so the umask does not
// matter), and a missing parent directory is created 0700. A socket left by a
// daemon that died is removed; if something still answers on it, ListenUnix
// refuses with ErrSocketInUse rather than stealing the path. Closing the
// listener removes the socket.
func ListenUnix(path string) (net.Listener, error) {
	if err := ensurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restricting %s to its owner: %w", path, err)
	}
	return ln, nil
}

// ensurePrivateDir creates dir (and parents) if missing, ending with mode
// 0700 on dir itself. An existing dir is left as it is: it may be
// $XDG_RUNTIME_DIR or a directory the user chose.
func ensurePrivateDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restricting socket directory: %w", err)
	}
	return nil
}

// removeStaleSocket removes a socket at path that nothing answers on.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking socket path: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket; remove it or choose another socket path", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("%s: %w (is another `mcpx serve` running?)", path, ErrSocketInUse)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("checking whether %s is live: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale socket: %w", err)
	}
	return nil
}

// ListenLoopback listens on a TCP address that must be on the loopback
// interface ("127.0.0.1:8080", "[::1]:0", "localhost:0"). Other addresses are
// refused: TCP callers prove with a bearer token that they are the daemon's
// user, and only this machine should see that token go by.
func ListenLoopback(addr string) (net.Listener, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err != nil || !ap.Addr().Unmap().IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("listen address %q resolved to %s, which is not loopback", addr, ln.Addr())
	}
	return ln, nil
}

// CheckLoopback reports whether addr is a host:port ListenLoopback accepts.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w (want host:port, e.g. 127.0.0.1:7777)", addr, err)
	}
	if !loopbackHost(host) {
		return fmt.Errorf("listen address %q is not a loopback address: mcpx only serves TCP on 127.0.0.1, [::1] or localhost", addr)
	}
	return nil
}

// ServeOptions configure Serve.
type ServeOptions struct {
	Logger *slog.Logger // server errors (bad handshakes, panics); nil = discard
	// DrainTimeout bounds how long shutdown waits for in-flight requests
	// (tool calls, event streams). Requests still running then are
	// cancelled and answered 503 with Retry-After (see ErrShuttingDown)
	// before their connections close. 0 = DefaultDrainTimeout.
	DrainTimeout time.Duration
	// MaxConns caps the connections served at once on a network listener;
	// more wait in the kernel's accept backlog until one closes. Unix
	// sockets are never capped, so the owner's socket answers whatever TCP
	// callers do. 0 = DefaultMaxConns; negative = no cap.
	MaxConns int
	// WriteTimeout bounds each write to a client: one that reads nothing
	// of its response for this long is disconnected, which releases the
	// response. 0 = DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Identify authenticates every request of this listener, in place of
	// the unix-socket and loopback rules: a network listener that is
	// neither (the tailnet node) names its callers from the connection
	// (tailnet WhoIs), never from request headers. It returns the caller or
	// an error (a *broker.Error of KindForbidden is a 403 problem). nil =
	// the unix-socket and loopback rules, which refuse every other remote
	// address.
	Identify Identify
	// Host, on an Identify listener, reports whether a request's Host
	// header names this listener (the tailnet node's names and addresses):
	// a web page whose name was made to resolve to the listener's address
	// (DNS rebinding) sends its own. nil = any Host. Loopback listeners
	// always require a loopback name.
	Host func(host string) bool
}

// Identify names the caller of a request on one listener (see
// ServeOptions.Identify). It is called once per request, so rights granted
// outside the daemon (a tailnet grant) take effect on the next request. It
// must be safe for concurrent use. With an error it may still name the
// caller, with no rights (a tailnet peer whose grant was taken away): the
// tokens that caller minted then die with its rights.
type Identify func(*http.Request) (broker.Caller, error)

// DefaultMaxConns is ServeOptions.MaxConns when it is 0. A connection costs
// the daemon a descriptor; 512 of them, plus the children's pipes, fit even
// a 1,024-descriptor limit, and local clients rarely hold more than a few.
const DefaultMaxConns = 512

// DefaultWriteTimeout is ServeOptions.WriteTimeout when it is 0.
const DefaultWriteTimeout = 30 * time.Second

// NewServer returns an http.Server for h with the settings the API needs:
// ConnContext (unix peer credentials), a read-header timeout, and no write
// timeout (tool calls and event streams may run for minutes).
func NewServer(h http.Handler, logger *slog.Logger) *http.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ConnContext:       ConnContext,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// DefaultDrainTimeout is ServeOptions.DrainTimeout when it is 0.
const DefaultDrainTimeout = 10 * time.Second

// answerGrace bounds how long Serve waits, once the drain limit has passed,
// for the requests it cancelled to write their 503s.
const answerGrace = 2 * time.Second

// errShuttingDown is the cause with which Serve cancels the requests that
// outlive the drain limit; problem turns their errors into 503s.
var errShuttingDown = errors.New("the daemon is shutting down")

// Serve serves h on ln until ctx is done, then stops accepting, waits up to
// DrainTimeout for in-flight requests, cancels what remains (each answered
// 503 with Retry-After, bounded by a short grace) and closes the rest. It
// returns nil after a shutdown, or the error that stopped serving. Request
// contexts do not derive from ctx: cancelling ctx drains calls rather than
// aborting them.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts ServeOptions) error {
	ln = guard(ln, opts)
	srv := NewServer(h, opts.Logger)
	base, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	// draining is done when the drain begins: idle streams (an MCP
	// session's GET stream) end then, and do not hold the drain.
	draining, drain0 := context.WithCancel(context.Background())
	defer drain0()
	base = context.WithValue(base, drainingKey{}, draining)
	if opts.Identify != nil {
		base := context.WithValue(base, identifyKey{}, listenerOpts{identify: opts.Identify, host: opts.Host})
		srv.BaseContext = func(net.Listener) context.Context { return base }
	} else {
		srv.BaseContext = func(net.Listener) context.Context { return base }
	}
	fresh := trackFresh(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	drain := opts.DrainTimeout
	if drain <= 0 {
		drain = DefaultDrainTimeout
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	drain0()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(sctx) }()
	fresh.closeAll()
	err := <-shut
	if err != nil {
		err = fmt.Errorf("draining %s: %w", ln.Addr(), err)
		// Cancel what is left (the broker cancels the child calls) and
		// give the handlers a moment to say so: a caller whose call was cut
		// short learns why and when to retry instead of losing the
		// connection with no status.
		stop(errShuttingDown)
		gctx, gcancel := context.WithTimeout(context.Background(), answerGrace)
		if srv.Shutdown(gctx) != nil {
			srv.Close()
		}
		gcancel()
	}
	<-errc // http.ErrServerClosed
	return err
}

// drainingKey carries, in every request's context, a context that is done
// when its listener begins to drain.
type drainingKey struct{}

// untilDrain returns r's context, also done when r's listener begins to
// drain.
func untilDrain(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	if d, ok := r.Context().Value(drainingKey{}).(context.Context); ok {
		stop := context.AfterFunc(d, cancel)
		return ctx, func() { stop(); cancel() }
	}
	return ctx, cancel
}

// guard wraps ln so that a network listener serves at most opts.MaxConns
// connections at once and every connection bounds its writes by
// opts.WriteTimeout.
func guard(ln net.Listener, opts ServeOptions) net.Listener {
	g := &guardedListener{Listener: ln, done: make(chan struct{}),
		writeIdle: cmp.Or(opts.WriteTimeout, DefaultWriteTimeout)}
	if _, unix := ln.(*net.UnixListener); !unix && opts.MaxConns >= 0 {
		g.slots = make(chan struct{}, cmp.Or(opts.MaxConns, DefaultMaxConns))
	}
	return g
}

// guardedListener takes a slot before each Accept, so connections beyond
// the cap wait in the kernel's backlog and cost the daemon nothing.
type guardedListener struct {
	net.Listener
	slots     chan struct{} // one value per open connection; nil = no cap
	writeIdle time.Duration
	done      chan struct{} // closed by Close: unblocks an Accept waiting for a slot
	closeOnce sync.Once
}

func (l *guardedListener) Accept() (net.Conn, error) {
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		l.release()
		return nil, err
	}
	return &guardedConn{Conn: c, l: l}, nil
}

func (l *guardedListener) release() {
	if l.slots != nil {
		<-l.slots
	}
}

func (l *guardedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// writeChunk is how much one write may carry under one deadline, so that a
// large response to a slow but reading client is not cut off.
const writeChunk = 64 << 10

// guardedConn is an accepted connection: each write must make progress
// within writeIdle, and closing it frees its slot.
type guardedConn struct {
	net.Conn
	l    *guardedListener
	once sync.Once
}

func (c *guardedConn) Write(p []byte) (n int, err error) {
	for len(p) > 0 {
		chunk := p[:min(len(p), writeChunk)]
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.l.writeIdle)); err != nil {
			return n, err
		}
		m, err := c.Conn.Write(chunk)
		n += m
		p = p[m:]
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c *guardedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.l.release)
	return err
}

// CloseWrite lets net/http half-close the connection as it does a bare
// TCP or unix connection.
func (c *guardedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// NetConn returns the connection guardedConn wraps (as tls.Conn does).
func (c *guardedConn) NetConn() net.Conn { return c.Conn }

// freshConns are connections that have not sent a request yet. Shutdown
// treats them as busy for five seconds, but a client's spare keep-alive
// connection may never send one, so Serve closes them when shutdown starts.
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]bool // guarded by mu
}

func trackFresh(srv *http.Server) *freshConns {
	f := &freshConns{conns: map[net.Conn]bool{}}
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if s == http.StateNew {
			f.conns[c] = true
		} else {
			delete(f.conns, c)
		}
	}
	return f
}

func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
}
