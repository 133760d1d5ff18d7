package egress

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero values of Options.
const (
	DefaultMaxConns       = 128
	DefaultDialTimeout    = 10 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultMaxHeaderBytes = 64 << 10
	// A binding's first RefusalLogBurst refusals are logged one by one;
	// after that, one record per DefaultRefusalLogEvery (Options).
	RefusalLogBurst        = 20
	DefaultRefusalLogEvery = 10 * time.Second
)

// Options configure a Proxy. The zero value is ready: the system's resolver,
// the defaults above, nothing logged.
type Options struct {
	// Logger receives a Warn record for every refusal and an Info record
	// for every upstream that could not be reached, each with the binding's
	// server and instance, the host and port asked for, and why. Nil
	// discards them. Paths, queries and headers are never logged.
	//
	// A child that asks again and again for what it may not reach would
	// write the daemon's log full: past a binding's first RefusalLogBurst
	// refusals, one is logged per RefusalLogEvery, with "unlogged", the
	// count of those not logged since the last record. Counts counts
	// every one.
	Logger *slog.Logger
	// RefusalLogEvery spaces the refusal records past the burst; 0 means
	// DefaultRefusalLogEvery.
	RefusalLogEvery time.Duration

	// Resolver resolves the host names children ask for; nil means
	// net.DefaultResolver. Tests inject one that maps names to loopback
	// test hosts.
	Resolver Resolver

	// Permit are addresses a resolved name may reach although they lie in
	// the ranges refused by default (loopback, link-local, private, …; see
	// the package doc). Nil permits none, which is what the daemon wants;
	// a test permits the loopback address its test hosts listen on. This
	// host's own interface addresses stay refused all the same.
	Permit []netip.Prefix
	// Refuse are addresses refused beside the default ranges, say a
	// provider's metadata service outside link-local. Nil adds none.
	Refuse []netip.Prefix

	// MaxConns bounds each binding's concurrent connections from its child
	// (a tunnel is one); one more is answered 503 and closed. 0 means
	// DefaultMaxConns.
	MaxConns int
	// DialTimeout bounds resolving a name and connecting to it; 0 means
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// IdleTimeout closes a tunnel, or a forwarded request's upstream
	// connection, after this long without a byte either way, and a child's
	// idle keep-alive connection to the proxy; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// HeaderTimeout bounds reading a request's header; 0 means
	// DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// MaxHeaderBytes bounds a request's header (net/http answers 431
	// beyond it); 0 means DefaultMaxHeaderBytes.
	MaxHeaderBytes int
}

// Resolver resolves host names; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// A Binding ties one listener to the instance it serves.
type Binding struct {
	Server   string   // the configured server's name, for logs and counts
	Instance string   // the instance's id, for logs
	Allow    []string // the allowlist; see ParseAllow
}

// Counts are one server's egress decisions since the proxy started, over
// all its instances.
type Counts struct {
	Allowed uint64 // connections (CONNECT) and requests (plain HTTP) let through
	Refused uint64 // refusals, logged (Options.Logger says how often)
	Failed  uint64 // allowed, but the name did not resolve or the host did not answer
}

// A Proxy serves the egress of confined children, one listener per
// instance. Its methods are safe for concurrent use.
type Proxy struct {
	// Constant after New.
	opts     Options
	log      *slog.Logger
	resolver Resolver
	addrs    addrPolicy

	mu     sync.Mutex
	closed bool                     // guarded by mu
	served map[*Served]struct{}     // guarded by mu; the bindings not yet closed
	counts map[string]*serverCounts // guarded by mu; by server, never shrinks
}

type serverCounts struct {
	allowed, refused, failed atomic.Uint64
}

// New returns a proxy serving no listener yet.
func New(opts Options) *Proxy {
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = DefaultHeaderTimeout
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if opts.RefusalLogEvery <= 0 {
		opts.RefusalLogEvery = DefaultRefusalLogEvery
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var resolver Resolver = net.DefaultResolver
	if opts.Resolver != nil {
		resolver = opts.Resolver
	}
	return &Proxy{
		opts:     opts,
		log:      log,
		resolver: resolver,
		addrs: addrPolicy{
			permit: slices.Clone(opts.Permit),
			refuse: slices.Clone(opts.Refuse),
			own:    interfaceAddrs,
		},
		served: map[*Served]struct{}{},
		counts: map[string]*serverCounts{},
	}
}

// Serve serves ln for the instance b names, under b's allowlist, until
// the returned Served or the proxy is closed. ln is typically the listener a
// confined child's helper created on the loopback of the child's own
// network namespace and passed to the daemon; Serve owns it from the call
// on, and closes it even when it returns an error (a bad allowlist, or a
// closed proxy).
func (p *Proxy) Serve(ln net.Listener, b Binding) (*Served, error) {
	allow, err := ParseAllow(b.Allow)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress for server %s, instance %s: %w", b.Server, b.Instance, err)
	}
	b.Allow = slices.Clone(b.Allow)
	s := newServed(p, ln, b, allow)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return nil, fmt.Errorf("egress for server %s, instance %s: %w", b.Server, b.Instance, net.ErrClosed)
	}
	p.served[s] = struct{}{}
	s.start()
	p.mu.Unlock()
	return s, nil
}

// Close closes every binding's listener and connections and returns when
// every goroutine the proxy started has returned. Serve fails afterwards;
// a second Close returns an error wrapping net.ErrClosed.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("egress: proxy already closed: %w", net.ErrClosed)
	}
	p.closed = true
	served := make([]*Served, 0, len(p.served))
	for s := range p.served {
		served = append(served, s)
	}
	clear(p.served)
	p.mu.Unlock()
	for _, s := range served { // shut them all, then wait: the waits overlap
		s.shut()
	}
	for _, s := range served {
		s.wg.Wait()
	}
	return nil
}

// Counts returns each server's counts; the caller owns the map.
func (p *Proxy) Counts() map[string]Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]Counts, len(p.counts))
	for server, c := range p.counts {
		out[server] = Counts{Allowed: c.allowed.Load(), Refused: c.refused.Load(), Failed: c.failed.Load()}
	}
	return out
}

// counter returns server's counts, creating them. p.mu must be held.
func (p *Proxy) counter(server string) *serverCounts {
	c := p.counts[server]
	if c == nil {
		c = &serverCounts{}
		p.counts[server] = c
	}
	return c
}

// forget drops s from the bindings Close will close.
func (p *Proxy) forget(s *Served) {
	p.mu.Lock()
	delete(p.served, s)
	p.mu.Unlock()
}

// errClosed is what closing a closed binding returns.
var errClosed = fmt.Errorf("egress: binding already closed: %w", net.ErrClosed)
