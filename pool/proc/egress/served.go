package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/internal/hostlist"
)

// Served is one binding being served: its listener, the connections its
// child opened through it, and their upstreams. Its methods are safe for
// concurrent use.
type Served struct {
	// Constant after newServed.
	p      *Proxy
	b      Binding
	allow  *Allowlist
	log    *slog.Logger // with server and instance
	counts *serverCounts
	ln     net.Listener
	srv    *http.Server
	ctx    context.Context // cancelled by shut: ends dials and requests
	cancel context.CancelFunc

	// wg counts the accept loop, net/http's goroutine for each connection
	// until it closes or is hijacked, each running handler, and each
	// tunnel's second pipe.
	wg sync.WaitGroup

	mu      sync.Mutex
	closed  bool                      // guarded by mu
	conns   map[*trackedConn]struct{} // guarded by mu: clients and upstreams
	clients int                       // guarded by mu: clients in conns

	// The refusal log's spacing (logRefusal).
	logMu         sync.Mutex
	logged        int            // guarded by logMu: refusals logged
	lastLogged    time.Time      // guarded by logMu
	unlogged      int            // guarded by logMu: refusals since lastLogged not logged
	unloggedHosts map[string]int // guarded by logMu: their hosts, at most maxUnloggedHosts
}

// maxUnloggedHosts bounds the hosts a spaced refusal record names.
const maxUnloggedHosts = 8

func newServed(p *Proxy, ln net.Listener, b Binding, allow *Allowlist) *Served {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Served{
		p:      p,
		b:      b,
		allow:  allow,
		log:    p.log.With("server", b.Server, "instance", b.Instance),
		ln:     ln,
		ctx:    ctx,
		cancel: cancel,
		conns:  map[*trackedConn]struct{}{},
	}
	s.srv = &http.Server{
		Handler:                      http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout:            p.opts.HeaderTimeout,
		IdleTimeout:                  p.opts.IdleTimeout,
		MaxHeaderBytes:               p.opts.MaxHeaderBytes,
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:                  func(net.Listener) context.Context { return ctx },
		ConnState:                    s.connState,
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true) // no HTTP/2: CONNECT over h2 is another protocol
	s.srv.Protocols = protocols
	return s
}

// start starts the accept loop. p.mu is held, so Close waits for it. The
// server shows in Counts from its first binding on.
func (s *Served) start() {
	s.counts = s.p.counter(s.b.Server)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := s.srv.Serve(&listener{Listener: s.ln, s: s})
		if !errors.Is(err, http.ErrServerClosed) && s.ctx.Err() == nil {
			s.log.Error("egress listener failed: the child has lost its way out", "err", err)
		}
	}()
}

// connState keeps wg counting net/http's goroutine for each connection.
// StateNew is reported from the accept loop, which wg counts, before the
// connection's goroutine starts.
func (s *Served) connState(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		s.wg.Add(1)
	case http.StateHijacked, http.StateClosed:
		s.wg.Done()
	}
}

// Addr is the address of the binding's listener (in the child's network
// namespace, for a listener a helper passed).
func (s *Served) Addr() net.Addr { return s.ln.Addr() }

// Binding is what s serves; the caller owns the returned value.
func (s *Served) Binding() Binding {
	b := s.b
	b.Allow = slices.Clone(b.Allow)
	return b
}

// Close closes the binding's listener and every connection through it, and
// returns when every goroutine serving them has returned. A second Close
// returns an error wrapping net.ErrClosed.
func (s *Served) Close() error {
	if !s.shut() {
		return errClosed
	}
	s.p.forget(s)
	s.wg.Wait()
	return nil
}

// shut closes everything and reports whether it was open; wg.Wait follows.
func (s *Served) shut() bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.closed = true
	conns := make([]*trackedConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.cancel()
	s.srv.Close() // closes the listener and the connections net/http still holds
	s.ln.Close()  // if Serve had not started yet
	for _, c := range conns {
		c.Close()
	}
	return true
}

// serveHTTP serves one request of the child: CONNECT or an absolute URI.
func (s *Served) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.wg.Add(1) // the connection's goroutine, counted, runs this
	defer s.wg.Done()
	switch {
	case r.Method == http.MethodConnect:
		s.connect(w, r)
	case r.URL.IsAbs():
		s.forward(w, r)
	default:
		s.refuse(w, &Refusal{Host: r.Host, Why: "not a proxy request: send CONNECT host:port, or a request for an absolute http:// URI"}, http.StatusBadRequest)
	}
}

// refuse logs, counts and answers a refusal.
func (s *Served) refuse(w http.ResponseWriter, ref *Refusal, code int) {
	s.counts.refused.Add(1)
	s.logRefusal(clip(ref.Host), "host", clip(ref.Host), "port", ref.Port, "why", ref.Why)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintf(w, "mcpx egress (server %s): %s\n", s.b.Server, ref.Error())
}

// logRefusal logs a refusal of host ("" for none: the connection limit)
// with the attributes args, unless the binding is past its burst and logged
// one less than RefusalLogEvery ago. A record after some went unlogged says
// how many, and names their hosts (up to maxUnloggedHosts, each with its
// count), so that every refused host is named in the log all the same.
func (s *Served) logRefusal(host string, args ...any) {
	now := time.Now()
	s.logMu.Lock()
	log := s.logged < RefusalLogBurst || now.Sub(s.lastLogged) >= s.p.opts.RefusalLogEvery
	unlogged, hosts := 0, map[string]int(nil)
	if log {
		s.logged++
		s.lastLogged = now
		unlogged, hosts = s.unlogged, s.unloggedHosts
		s.unlogged, s.unloggedHosts = 0, nil
	} else {
		s.unlogged++
		if _, seen := s.unloggedHosts[host]; host != "" && (seen || len(s.unloggedHosts) < maxUnloggedHosts) {
			if s.unloggedHosts == nil {
				s.unloggedHosts = map[string]int{}
			}
			s.unloggedHosts[host]++
		}
	}
	s.logMu.Unlock()
	if !log {
		return
	}
	if unlogged > 0 {
		args = append(args, "unlogged", unlogged)
		if len(hosts) > 0 {
			names := slices.Sorted(maps.Keys(hosts))
			for i, h := range names {
				names[i] = fmt.Sprintf("%s (%d)", h, hosts[h])
			}
			args = append(args, "unloggedHosts", strings.Join(names, ", "))
		}
	}
	s.log.Warn("egress refused", args...)
}

// clip bounds what a child's request puts in a log line.
func clip(s string) string {
	const max = 255
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// open connects the child to host:port if the policy allows it, or
// answers w with the refusal (403) or the failure (502) and returns nil.
func (s *Served) open(ctx context.Context, w http.ResponseWriter, host string, port int) *trackedConn {
	t, err := s.allow.Match(host, port)
	if err == nil {
		var up *trackedConn
		if up, err = s.dial(ctx, t, host); err == nil {
			return up
		}
	}
	var ref *Refusal
	if errors.As(err, &ref) {
		s.refuse(w, ref, http.StatusForbidden)
	} else {
		s.failed(w, host, port, err)
	}
	return nil
}

// dial resolves t, drops the addresses a name may not reach, and connects
// to the first that answers. A *Refusal means the policy refused every
// address; any other error, that the name or the host failed.
func (s *Served) dial(ctx context.Context, t hostlist.Target, host string) (*trackedConn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.p.opts.DialTimeout)
	defer cancel()
	addrs := []netip.Addr{t.Addr}
	if !t.Literal {
		found, err := s.p.resolver.LookupNetIP(ctx, "ip", t.Name)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", t.Name, err)
		}
		if addrs, err = s.reachable(found, t, host); err != nil {
			return nil, err
		}
	}
	d := net.Dialer{KeepAlive: 30 * time.Second}
	deadline, _ := ctx.Deadline()
	var errs []error
	for i, a := range addrs {
		// Each address gets its share of the time left, as net.Dialer
		// shares it: one that drops packets must not starve the next.
		actx, cancel := context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/time.Duration(len(addrs)-i)))
		c, err := d.DialContext(actx, "tcp", netip.AddrPortFrom(a, t.Port).String())
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tc, ok := s.track(c, false)
		if !ok {
			return nil, fmt.Errorf("connecting to %s: %w", t.Name, errClosed)
		}
		s.counts.allowed.Add(1)
		s.log.Debug("egress connected", "host", clip(host), "port", t.Port, "addr", a)
		return tc, nil
	}
	return nil, fmt.Errorf("connecting to %s: %w", host, errors.Join(errs...))
}

// reachable keeps the addresses the policy lets a name reach, or refuses.
func (s *Served) reachable(found []netip.Addr, t hostlist.Target, host string) ([]netip.Addr, error) {
	own, err := s.p.addrs.own()
	if err != nil {
		return nil, &Refusal{Host: host, Port: int(t.Port), Why: "this host's own addresses could not be read (" + err.Error() + "), so no name is reached"}
	}
	var ok []netip.Addr
	var why []string
	for _, a := range found {
		if w := s.p.addrs.why(a, t.Port, s.allow, own); w != "" {
			why = append(why, fmt.Sprintf("%s (%s)", a, w))
		} else {
			ok = append(ok, a.Unmap())
		}
	}
	if len(ok) == 0 {
		if len(why) == 0 {
			return nil, fmt.Errorf("resolving %s: no addresses", t.Name)
		}
		if len(why) > 4 {
			why = append(why[:4], "…")
		}
		return nil, &Refusal{Host: host, Port: int(t.Port),
			Why: "resolves only to addresses names may not reach: " + strings.Join(why, ", ") + "; list the address itself to allow it"}
	}
	return ok, nil
}

// failed logs and counts an allowed connection that did not happen.
func (s *Served) failed(w http.ResponseWriter, host string, port int, err error) {
	s.counts.failed.Add(1)
	s.log.Info("egress failed", "host", clip(host), "port", port, "err", err)
	http.Error(w, fmt.Sprintf("mcpx egress (server %s): %s: %v", s.b.Server, net.JoinHostPort(host, strconv.Itoa(port)), err), http.StatusBadGateway)
}
