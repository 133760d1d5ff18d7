package tsnet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"tailscale.com/client/local"
	"tailscale.com/ipn"
	"tailscale.com/ipn/ipnstate"
	tsnetpkg "tailscale.com/tsnet"
)

// DefaultUpTimeout is Node.UpTimeout when it is 0.
const DefaultUpTimeout = 60 * time.Second

// Node is the broker's embedded tailnet node. Set its fields, call Up once,
// serve the listener of Listen, and Close it when done. The fields must not
// change after Up.
type Node struct {
	// Hostname is the node's name on the tailnet (its MagicDNS label).
	// Required.
	Hostname string
	// Dir is the node's state directory (keys, the netmap cache); the
	// daemon puts it under its own state directory. Required: tsnet's
	// default (the user's config directory) does not exist for service
	// users.
	Dir string
	// AuthKey joins the tailnet without an interactive login; "" = tsnet's
	// TS_AUTHKEY / TS_AUTH_KEY from the environment, else a login URL is
	// logged and Up fails with it at its deadline. Ignored once Dir holds
	// a node's state. Never logged.
	AuthKey string
	// ControlURL is the coordination server (Headscale, a test control
	// server); "" = Tailscale's.
	ControlURL string
	// Tags are advertised for the node ("tag:mcpx"); an auth key or OAuth
	// secret must be allowed to set them. nil = none.
	Tags []string
	// Ephemeral makes the node disappear from the tailnet soon after it
	// goes offline.
	Ephemeral bool
	// UpTimeout bounds Up; 0 = DefaultUpTimeout.
	UpTimeout time.Duration
	// Capability is the app-capability grant read by Identify; "" =
	// DefaultCapability.
	Capability string
	// CertTimeout bounds ListenTLS's request for a certificate; 0 =
	// DefaultCertTimeout.
	CertTimeout time.Duration
	// Logger receives the node's records: one line when it is up, the
	// login URL, and tsnet's own logs at debug level. nil = discard.
	Logger *slog.Logger

	mu      sync.Mutex       // guards the fields below
	started bool             // Up was called
	running bool             // tsnet's Start succeeded: Close must close srv
	closed  bool             // Close was called (or a failed Up closed the node)
	srv     *tsnetpkg.Server // set by Up
	lc      *local.Client    // set once the node has started
	info    Info             // set when Up succeeds
}

// Info describes a node that is up, for /v1/whoami and status.
type Info struct {
	Name    string       // the node's short name ("broker")
	DNSName string       // its MagicDNS name, without the final dot ("broker.tail-scale.ts.net")
	IPs     []netip.Addr // its tailnet addresses, IPv4 first
}

// errNotUp is returned by the methods that need a node Up has started.
var errNotUp = errors.New("tailnet node is not up (call Up first)")

// Up starts the node and waits, at most UpTimeout, until it has joined the
// tailnet. It may be called once; a failed Up leaves the node closed. Its
// error says what the node was waiting for: a login (with the URL to
// open), a machine approval, or a control server that did not answer.
func (n *Node) Up(ctx context.Context) (Info, error) {
	if n.Hostname == "" || n.Dir == "" {
		return Info{}, errors.New("tailnet node: Hostname and Dir are required")
	}
	n.mu.Lock()
	if n.started {
		n.mu.Unlock()
		return Info{}, errors.New("tailnet node: Up called twice")
	}
	n.started = true
	log := n.logger()
	n.srv = &tsnetpkg.Server{
		Dir:           n.Dir,
		Hostname:      n.Hostname,
		AuthKey:       n.AuthKey,
		ControlURL:    n.ControlURL,
		AdvertiseTags: n.Tags,
		Ephemeral:     n.Ephemeral,
		Logf:          debugf(log, "tsnet"),
		UserLogf:      debugf(log, "tsnet-user"),
	}
	n.mu.Unlock()

	timeout := cmp.Or(n.UpTimeout, DefaultUpTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	began := time.Now()
	info, err := n.up(ctx)
	if err != nil {
		if ctx.Err() != nil {
			err = n.diagnose(timeout)
		}
		n.abandon()
		return Info{}, err
	}
	n.mu.Lock()
	n.info = info
	n.mu.Unlock()
	log.Info("tailnet node up", "name", info.DNSName, "ips", info.IPs, "took", time.Since(began).Round(time.Millisecond))
	return info, nil
}

// up starts the node and follows its state until it runs.
func (n *Node) up(ctx context.Context) (Info, error) {
	if err := n.srv.Start(); err != nil {
		return Info{}, fmt.Errorf("starting tailnet node %q: %w", n.Hostname, err)
	}
	n.mu.Lock()
	n.running = true
	n.mu.Unlock()
	lc, err := n.srv.LocalClient()
	if err != nil {
		return Info{}, fmt.Errorf("tailnet node %q: %w", n.Hostname, err)
	}
	n.mu.Lock()
	n.lc = lc
	n.mu.Unlock()
	w, err := lc.WatchIPNBus(ctx, ipn.NotifyInitialState)
	if err != nil {
		return Info{}, fmt.Errorf("tailnet node %q: %w", n.Hostname, err)
	}
	defer w.Close()
	var loginURL string
	for {
		note, err := w.Next()
		if err != nil {
			return Info{}, fmt.Errorf("tailnet node %q: %w", n.Hostname, err)
		}
		if note.ErrMessage != nil {
			return Info{}, fmt.Errorf("tailnet node %q: %s", n.Hostname, *note.ErrMessage)
		}
		if u := note.BrowseToURL; u != nil && *u != "" && *u != loginURL {
			loginURL = *u
			n.logger().Warn("tailnet node needs login: open this URL, or restart with an auth key", "url", loginURL)
		}
		if note.State != nil && *note.State == ipn.Running {
			break
		}
	}
	// tsnet's Up returns at once now, and clears a stale serve config.
	st, err := n.srv.Up(ctx)
	if err != nil {
		return Info{}, fmt.Errorf("tailnet node %q: %w", n.Hostname, err)
	}
	return infoOf(st), nil
}

// diagnose explains why Up ran out of time, from the node's own status.
func (n *Node) diagnose(timeout time.Duration) error {
	n.mu.Lock()
	lc := n.lc
	n.mu.Unlock()
	control := cmp.Or(n.ControlURL, "the Tailscale control server")
	if lc == nil {
		return fmt.Errorf("tailnet node %q did not start within %s", n.Hostname, timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := lc.StatusWithoutPeers(ctx)
	if err != nil {
		return fmt.Errorf("tailnet node %q did not come up within %s: %w", n.Hostname, timeout, err)
	}
	health := ""
	if len(st.Health) > 0 {
		health = " (" + strings.Join(st.Health, "; ") + ")"
	}
	switch {
	case st.AuthURL != "":
		return fmt.Errorf("tailnet node %q needs login: open %s, or start it with an auth key (--tailnet-authkey-file or TS_AUTHKEY)%s",
			n.Hostname, st.AuthURL, health)
	case st.BackendState == ipn.NeedsLogin.String():
		// No URL: control never answered, or wants a key rather than a
		// browser. The health messages carry the last login error.
		return fmt.Errorf("tailnet node %q got no login from %s within %s: is it reachable? A control server without interactive login needs an auth key (--tailnet-authkey-file or TS_AUTHKEY)%s",
			n.Hostname, control, timeout, health)
	case st.BackendState == ipn.NeedsMachineAuth.String():
		return fmt.Errorf("tailnet node %q waits for an administrator to approve it in %s%s", n.Hostname, control, health)
	}
	return fmt.Errorf("tailnet node %q did not come up within %s (state %s): is %s reachable?%s",
		n.Hostname, timeout, st.BackendState, control, health)
}

func infoOf(st *ipnstate.Status) Info {
	info := Info{IPs: st.TailscaleIPs}
	if st.Self != nil {
		info.Name = st.Self.HostName
		info.DNSName = strings.TrimSuffix(st.Self.DNSName, ".")
	}
	return info
}

// Info describes the node; the zero Info before Up succeeds.
func (n *Node) Info() Info {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.info
}

// Listen returns the listener of the broker's API on the tailnet: plain
// HTTP on port 80, carried by WireGuard. It is served whether or not
// ListenTLS finds a certificate.
func (n *Node) Listen() (net.Listener, error) {
	srv, err := n.ready()
	if err != nil {
		return nil, err
	}
	ln, err := srv.Listen("tcp", ":80")
	if err != nil {
		return nil, fmt.Errorf("tailnet node %q: listening on :80: %w", n.Hostname, err)
	}
	return ln, nil
}

// DefaultCertTimeout is Node.CertTimeout when it is 0.
const DefaultCertTimeout = 20 * time.Second

// ListenTLS returns a TLS listener on port 443 when the tailnet can issue
// the node a certificate, else nil and no error: the API is then served
// over plain HTTP on :80 only (WireGuard still encrypts it), and one log
// line says why. It never fails the daemon for want of a certificate.
//
// A tailnet may announce certificate domains it cannot issue (offline,
// HTTPS disabled in the admin console, a control server without ACME), so
// before listening it asks for the certificate of the node's first domain
// once, bounded by CertTimeout. A certificate obtained (or cached in Dir)
// makes later TLS handshakes answer from the cache.
func (n *Node) ListenTLS(ctx context.Context) (net.Listener, error) {
	srv, err := n.ready()
	if err != nil {
		return nil, err
	}
	log := n.logger()
	domains := srv.CertDomains()
	if len(domains) == 0 {
		log.Info("tailnet offers no HTTPS certificates (enable HTTPS in the tailnet's DNS settings); serving HTTP on :80 only")
		return nil, nil
	}
	if err := n.probeCert(ctx, domains[0]); err != nil {
		log.Info("tailnet announces a certificate domain but no certificate could be obtained; serving HTTP on :80 only",
			"domain", domains[0], "err", err)
		return nil, nil
	}
	ln, err := srv.ListenTLS("tcp", ":443")
	if err != nil {
		log.Info("tailnet TLS listener refused; serving HTTP on :80 only", "err", err)
		return nil, nil
	}
	log.Info("tailnet serving HTTPS on :443", "domain", domains[0])
	return ln, nil
}

// FunnelPort is the port of the public face on Tailscale Funnel: 443 is
// the tailnet's own HTTPS (ListenTLS), so Funnel takes 8443, one of the
// ports it allows.
const FunnelPort = 8443

// ListenFunnel returns the public face's listener on Tailscale Funnel
// (docs/public.md): TLS on FunnelPort, with the tailnet's certificate,
// reached from the internet only (tsnet.FunnelOnly: a tailnet peer's
// connection to that port is not accepted there, so no WhoIs identity can
// ever reach the public face), and the URL the internet reaches it by. It
// fails when the tailnet does not allow this node Funnel (the "funnel"
// node attribute in the tailnet policy, and HTTPS certificates on).
func (n *Node) ListenFunnel() (net.Listener, string, error) {
	srv, err := n.ready()
	if err != nil {
		return nil, "", err
	}
	domains := srv.CertDomains()
	if len(domains) == 0 {
		return nil, "", fmt.Errorf("tailnet node %q: Funnel needs HTTPS certificates: enable HTTPS in the tailnet's DNS settings", n.Hostname)
	}
	ln, err := srv.ListenFunnel("tcp", fmt.Sprintf(":%d", FunnelPort), tsnetpkg.FunnelOnly())
	if err != nil {
		return nil, "", fmt.Errorf("tailnet node %q: Funnel on :%d: %w (the tailnet policy must give this node the \"funnel\" attribute)", n.Hostname, FunnelPort, err)
	}
	n.logger().Info("public face on Tailscale Funnel", "url", fmt.Sprintf("https://%s:%d", domains[0], FunnelPort))
	return ln, fmt.Sprintf("https://%s:%d", domains[0], FunnelPort), nil
}

// probeCert asks the node for the certificate of domain, bounded by
// CertTimeout: an announced domain proves nothing until a certificate
// comes back.
func (n *Node) probeCert(ctx context.Context, domain string) error {
	n.mu.Lock()
	lc := n.lc
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(n.CertTimeout, DefaultCertTimeout))
	defer cancel()
	_, _, err := lc.CertPair(ctx, domain)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("no certificate within %s", cmp.Or(n.CertTimeout, DefaultCertTimeout))
	}
	return err
}

// Dial connects to addr ("host:port", a MagicDNS name or a tailnet
// address) over the tailnet, for a client that has no tailscaled of its
// own. A name is resolved from the node's netmap; a node just up from saved
// state may not have received it yet, so Dial first waits (bounded by ctx
// and PeerWait) until a peer of that name is known.
func (n *Node) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	srv, err := n.ready()
	if err != nil {
		return nil, err
	}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if _, err := netip.ParseAddr(host); err != nil {
			if err := n.waitPeer(ctx, host); err != nil {
				return nil, err
			}
		}
	}
	return srv.Dial(ctx, network, addr)
}

// PeerWait bounds how long Dial waits for a named peer to appear in the
// node's netmap.
const PeerWait = 15 * time.Second

// waitPeer waits until the netmap holds a peer called host (its short name
// or MagicDNS name), polling every 20ms for at most PeerWait.
func (n *Node) waitPeer(ctx context.Context, host string) error {
	n.mu.Lock()
	lc := n.lc
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, PeerWait)
	defer cancel()
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for {
		st, err := lc.Status(ctx)
		if err == nil {
			for _, p := range st.Peer {
				dns := strings.ToLower(strings.TrimSuffix(p.DNSName, "."))
				if dns == host || strings.HasPrefix(dns, host+".") || strings.EqualFold(p.HostName, host) {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("tailnet node %q: no peer called %q on the tailnet: is the broker's node up, and is this node allowed to see it?", n.Hostname, host)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ready returns the tsnet server of a node that is up and not closed.
func (n *Node) ready() (*tsnetpkg.Server, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lc == nil || n.closed {
		return nil, errNotUp
	}
	return n.srv, nil
}

// HTTPClient returns a client whose connections go over the tailnet (for
// tests and the laptop side).
func (n *Node) HTTPClient() (*http.Client, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lc == nil || n.closed {
		return nil, errNotUp
	}
	return n.srv.HTTPClient(), nil
}

// abandon closes the node after a failed Up. tsnet's Close must not run
// before its Start did: a failed Start has unwound itself.
func (n *Node) abandon() {
	n.mu.Lock()
	running := n.running
	if !running {
		n.closed = true
	}
	n.mu.Unlock()
	if running {
		n.Close()
	}
}

// Close leaves the tailnet and releases the node. It may be called once
// after Up (a failed Up has closed the node already); later calls return an
// error wrapping net.ErrClosed.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed || n.srv == nil {
		n.mu.Unlock()
		return fmt.Errorf("tailnet node %q: %w", n.Hostname, net.ErrClosed)
	}
	n.closed = true
	srv := n.srv
	n.mu.Unlock()
	return srv.Close()
}

func (n *Node) logger() *slog.Logger {
	if n.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return n.Logger
}

// debugf routes a tailscale logger.Logf to log at debug level: tsnet is
// chatty, and its lines matter only when a node will not come up.
func debugf(log *slog.Logger, source string) func(string, ...any) {
	log = log.With("source", source)
	return func(format string, args ...any) {
		if log.Enabled(context.Background(), slog.LevelDebug) {
			log.Debug(strings.TrimSuffix(fmt.Sprintf(format, args...), "\n"))
		}
	}
}
