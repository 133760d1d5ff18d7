// Package fleet finds the mcpx brokers among a tailnet node's peers and
// asks each one, in parallel and bounded, what it serves: `mcpx fleet ls`
// and GET /v1/fleet.
//
// The tailnet is the fleet's directory: there is no membership protocol.
// The caller (package tsnet, from its node's status) hands Discover the
// node's peers and a dialer over the tailnet; Discover selects the brokers
// by a tag (default tag:mcpx, which `mcpx serve --tailnet --tailnet-tags
// tag:mcpx` advertises) or, with Probe, asks every peer's :80 /healthz and
// keeps those that answer as an mcpx broker does. Then each broker is
// asked /healthz, /v1/whoami and /v1/servers (whose servers carry their
// running instances): one bound per peer (Timeout, 2s) and one for all
// (Total), so an unreachable peer costs at most Timeout and is shown as
// such, never waited on.
//
// Each broker answers with what its grant lets the asking node see: the
// servers it may use and their instance counts, nothing else. A broker
// that refuses the node (no grant) is shown as refused with its reason.
// Errors are worded here (no answer, refused, not a broker): raw dial
// errors, which name internal addresses, are not passed on.
//
// fleet never imports tailscale.com or the API server: peers and the
// dialer are plain values, so its tests run without a tailnet.
package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// Defaults of Options.
const (
	DefaultTimeout  = 2 * time.Second
	DefaultTotal    = 10 * time.Second
	DefaultParallel = 16
)

// Peer is a tailnet peer as the asking node sees it.
type Peer struct {
	Name    string   // the short host name
	DNSName string   // the MagicDNS name, without the final dot
	IPs     []string // tailnet addresses, IPv4 first
	Tags    []string // tailnet tags ("tag:mcpx")
	Online  bool     // as the control server reports it
}

// Options configure Discover.
type Options struct {
	// Dial connects over the tailnet ("tcp", "name:80"). Required.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Tag selects the brokers; "" = wire.DefaultFleetTag. Ignored with
	// Probe.
	Tag string
	// Probe asks every peer's /healthz instead of selecting by tag; peers
	// that do not answer as a broker are left out.
	Probe bool
	// Timeout bounds the questions to one peer; 0 = DefaultTimeout.
	Timeout time.Duration
	// Total bounds the whole discovery; 0 = DefaultTotal.
	Total time.Duration
	// Parallel is how many peers are asked at once; 0 = DefaultParallel.
	Parallel int
}

// CheckTag says what is wrong with a tag given to select brokers.
func CheckTag(tag string) error {
	name, ok := strings.CutPrefix(tag, "tag:")
	if !ok || name == "" || strings.ContainsAny(name, " \t,/") {
		return fmt.Errorf("tag %q: a tailnet tag is tag:<name>, e.g. %s", tag, wire.DefaultFleetTag)
	}
	return nil
}

// Discover selects the brokers among peers and asks each one. The brokers
// are sorted by name; with Probe, peers that are not brokers are left out.
func Discover(ctx context.Context, peers []Peer, opts Options) wire.Fleet {
	timeout := cmp.Or(opts.Timeout, DefaultTimeout)
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(opts.Total, DefaultTotal))
	defer cancel()
	f := wire.Fleet{Probe: opts.Probe, Brokers: []wire.FleetBroker{}}
	if !opts.Probe {
		f.Tag = cmp.Or(opts.Tag, wire.DefaultFleetTag)
	}
	var selected []Peer
	for _, p := range peers {
		if opts.Probe || slices.Contains(p.Tags, f.Tag) {
			selected = append(selected, p)
		}
	}
	out := make([]wire.FleetBroker, len(selected))
	sem := make(chan struct{}, max(cmp.Or(opts.Parallel, DefaultParallel), 1))
	var wg sync.WaitGroup
	for i, p := range selected {
		wg.Go(func() {
			out[i] = entry(p)
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				out[i].State, out[i].Error = wire.FleetUnreachable, "not asked: the fleet's time ran out"
				return
			}
			defer func() { <-sem }()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			ask(pctx, &out[i], opts.Dial, timeout)
		})
	}
	wg.Wait()
	for _, b := range out {
		if opts.Probe && b.Version == "" {
			continue // no broker answered there
		}
		f.Brokers = append(f.Brokers, b)
	}
	slices.SortFunc(f.Brokers, func(a, b wire.FleetBroker) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.DNSName, b.DNSName))
	})
	return f
}

func entry(p Peer) wire.FleetBroker {
	b := wire.FleetBroker{Name: p.Name, DNSName: p.DNSName, IPs: p.IPs, Tags: p.Tags, Online: p.Online}
	if b.IPs == nil {
		b.IPs = []string{}
	}
	return b
}

// ask fills b from the broker's answers, bounded by ctx.
func ask(ctx context.Context, b *wire.FleetBroker, dial func(context.Context, string, string) (net.Conn, error), timeout time.Duration) {
	host := cmp.Or(b.DNSName, b.Name)
	if host == "" && len(b.IPs) > 0 {
		host = b.IPs[0]
	}
	c := client.New("http://"+host, client.Options{Dial: dial})
	h, _, err := c.Healthz(ctx)
	if err != nil {
		b.State, b.Error = failure(ctx, err, timeout)
		return
	}
	if h.Status != "ok" || h.Version == "" {
		b.State, b.Error = wire.FleetError, "its /healthz does not answer as an mcpx broker's"
		return
	}
	b.Version = h.Version
	var (
		servers       *wire.ServerList
		who           *wire.Whoami
		errSrv, errWh error
		wg            sync.WaitGroup
	)
	wg.Go(func() { servers, _, errSrv = c.Servers(ctx) })
	wg.Go(func() { who, _, errWh = c.Whoami(ctx, client.Caller{}) })
	wg.Wait()
	if err := cmp.Or(errSrv, errWh); err != nil {
		b.State, b.Error = failure(ctx, err, timeout)
		return
	}
	b.State, b.Caller = wire.FleetOK, who.Caller.Name
	for _, s := range servers.Servers {
		b.Servers = append(b.Servers, wire.FleetServer{Name: s.Name, Instances: s.Instances})
		b.Instances += s.Instances
	}
}

// failure words why a broker could not be asked. A broker's own problem
// (refused: no grant) is passed on: it is written for remote callers.
func failure(ctx context.Context, err error, timeout time.Duration) (state, msg string) {
	var p *wire.Problem
	switch {
	case errors.As(err, &p) && (p.Status == 401 || p.Status == 403):
		return wire.FleetRefused, p.Detail
	case errors.As(err, &p):
		return wire.FleetError, fmt.Sprintf("answered %d %s", p.Status, p.Kind())
	case ctx.Err() != nil:
		return wire.FleetUnreachable, fmt.Sprintf("no answer within %s", timeout)
	}
	var ue *client.UnreachableError
	if errors.As(err, &ue) {
		return wire.FleetUnreachable, "no broker listening on its :80"
	}
	return wire.FleetError, "its answer was not an mcpx broker's"
}
