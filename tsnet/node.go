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
// HTTP on port 80, carried by WireGuard.
//
// TODO(2026-11-30, issue 7 "Reachable over the tailnet"): ListenTLS(":443")
// when the tailnet can really issue certificates. A tailnet may announce
// certificate domains it cannot issue (offline, HTTPS disabled), so their
// presence alone is no reason to switch; for now it is one log line.
func (n *Node) Listen() (net.Listener, error) {
	n.mu.Lock()
	srv, ready, closed := n.srv, n.lc != nil, n.closed
	n.mu.Unlock()
	if !ready || closed {
		return nil, errNotUp
	}
	ln, err := srv.Listen("tcp", ":80")
	if err != nil {
		return nil, fmt.Errorf("tailnet node %q: listening on :80: %w", n.Hostname, err)
	}
	if d := srv.CertDomains(); len(d) > 0 {
		n.logger().Info("tailnet announces certificate domains; serving plain HTTP on :80 over WireGuard (TLS is not served yet)", "domains", d)
	}
	return ln, nil
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
