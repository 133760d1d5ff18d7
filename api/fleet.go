package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/client/fleet"
	"mcpx.dev/mcpx/wire"
)

// Tailnet is the daemon's tailnet node as the API reaches it: its state
// (GET /v1/tailnet) and its peers and dialer, from which GET /v1/fleet asks
// the other brokers. cmd fills it from its tsnet node; api never imports
// tailscale.
type Tailnet struct {
	// Status is the node's state now.
	Status func(ctx context.Context) wire.TailnetStatus
	// Peers are the node's peers.
	Peers func(ctx context.Context) ([]fleet.Peer, error)
	// Dial connects over the tailnet.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// WhoIs names the peer at a tailnet address with its grant, as the
	// listener's Identify does; the public face asks it at each use of a
	// token a tailnet identity approved (publicconsent.go). nil = such
	// tokens are refused.
	WhoIs func(ctx context.Context, addr string) (broker.Caller, error)
	// Timeout bounds the questions to one broker; 0 = fleet.DefaultTimeout.
	Timeout time.Duration
	// Port is the port the brokers serve their API on over the tailnet,
	// as GET /v1/fleet/sd names their targets; 0 = 80, where `mcpx serve
	// --tailnet` serves it. (Tests serve brokers elsewhere.)
	Port int
}

// getTailnet is GET /v1/tailnet: the node's state, for an admin (it names
// the login URL).
func (s *server) getTailnet(w http.ResponseWriter, r *http.Request) error {
	if c, _ := callerFrom(r.Context()); !c.Rights.Admin() && !c.Owner {
		return &broker.Error{Kind: broker.KindForbidden, Op: "tailnet", Msg: "only an admin may see the daemon's tailnet node"}
	}
	if s.tailnet == nil {
		writeJSON(w, http.StatusOK, wire.TailnetStatus{State: wire.TailnetOff})
		return nil
	}
	writeJSON(w, http.StatusOK, s.tailnet.Status(r.Context()))
	return nil
}

// getFleet is GET /v1/fleet: the brokers among the daemon node's peers,
// asked by that node (with the rights their grants give it), and the
// daemon itself first. Admins and the owner only: it lists every broker
// the daemon's node can see.
func (s *server) getFleet(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	if !c.Rights.Admin() && !c.Owner {
		return &broker.Error{Kind: broker.KindForbidden, Op: "fleet",
			Msg: "only an admin may list the fleet: it names every broker this daemon's tailnet node can see"}
	}
	if s.tailnet == nil {
		return &broker.Error{Kind: broker.KindUnavailable, Op: "fleet", Msg: "the daemon is not on a tailnet",
			Hint: "start it with `mcpx serve --tailnet --tailnet-tags tag:mcpx`, or run `mcpx fleet ls --tsnet` to look from a node of the CLI's own"}
	}
	f, err := s.discoverFleet(r)
	if err != nil {
		return err
	}
	f.Brokers = append([]wire.FleetBroker{s.fleetSelf(c)}, f.Brokers...)
	if s.node != nil {
		f.Node = s.node.DNSName
	}
	writeJSON(w, http.StatusOK, f)
	return nil
}

// discoverFleet asks the brokers among the daemon node's peers, selected
// and bounded by the request's ?tag=, ?probe= and ?timeout=.
func (s *server) discoverFleet(r *http.Request) (wire.Fleet, error) {
	opts, err := s.fleetOptions(r)
	if err != nil {
		return wire.Fleet{}, err
	}
	peers, err := s.tailnet.Peers(r.Context())
	if err != nil {
		s.log.Warn("fleet: reading the tailnet's peers", "err", err)
		return wire.Fleet{}, &broker.Error{Kind: broker.KindUnavailable, Op: "fleet", Msg: "the daemon's tailnet node cannot list its peers now",
			Hint: "see GET /v1/tailnet (`mcpx doctor`) for the node's state"}
	}
	return fleet.Discover(r.Context(), peers, opts), nil
}

// fleetOptions reads the request's ?tag=, ?probe= and ?timeout=.
func (s *server) fleetOptions(r *http.Request) (fleet.Options, error) {
	q := r.URL.Query()
	opts := fleet.Options{Dial: s.tailnet.Dial, Tag: q.Get(wire.QueryTag), Timeout: s.tailnet.Timeout}
	if v := q.Get(wire.QueryProbe); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return opts, &broker.Error{Kind: broker.KindBadRequest, Op: "fleet", Field: wire.QueryProbe,
				Msg: fmt.Sprintf("probe=%q is not a boolean", v), Hint: "use probe=true to ask every peer"}
		}
		opts.Probe = b
	}
	if v := q.Get(wire.QueryTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond || d > 30*time.Second {
			return opts, &broker.Error{Kind: broker.KindBadRequest, Op: "fleet", Field: wire.QueryTimeout,
				Msg: fmt.Sprintf("timeout=%q is not a duration from 100ms to 30s", v), Hint: "e.g. timeout=5s"}
		}
		// The peers are asked in parallel: the whole answer takes about
		// one bound, within fleet.DefaultTotal or a little over the bound.
		opts.Timeout, opts.Total = d, max(fleet.DefaultTotal, d+time.Second)
	}
	if opts.Tag != "" {
		if err := fleet.CheckTag(opts.Tag); err != nil {
			return opts, &broker.Error{Kind: broker.KindBadRequest, Op: "fleet", Field: wire.QueryTag, Msg: err.Error()}
		}
	}
	return opts, nil
}

// fleetSelf is the daemon's own entry of its fleet, from its broker.
func (s *server) fleetSelf(c broker.Caller) wire.FleetBroker {
	self := wire.FleetBroker{Self: true, Online: true, State: wire.FleetOK, Version: s.version, Caller: c.Name, IPs: []string{}}
	if s.node != nil {
		self.Name, self.DNSName, self.IPs = s.node.Name, s.node.DNSName, s.node.IPs
	}
	for _, si := range s.b.Servers(c) {
		self.Servers = append(self.Servers, wire.FleetServer{Name: si.Name, Instances: si.Instances})
		self.Instances += si.Instances
	}
	return self
}
