package tsnet

import (
	"context"
	"strings"
	"time"

	"tailscale.com/client/local"
	"tailscale.com/ipn"
	"tailscale.com/ipn/ipnstate"

	"mcpx.dev/mcpx/client/fleet"
	"mcpx.dev/mcpx/wire"
)

// Peers returns the node's peers as package fleet reads them: the
// tailnet is the fleet's directory. A peer's Name is the first label of
// its MagicDNS name (what `--broker <name>` reaches), not the host name it
// reported, which need not be unique.
func (n *Node) Peers(ctx context.Context) ([]fleet.Peer, error) {
	if _, err := n.ready(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	lc := n.lc
	n.mu.Unlock()
	st, err := n.waitRelay(ctx, lc)
	if err != nil {
		return nil, err
	}
	peers := make([]fleet.Peer, 0, len(st.Peer))
	for _, p := range st.Peer {
		dns := strings.TrimSuffix(p.DNSName, ".")
		name, _, _ := strings.Cut(dns, ".")
		if name == "" {
			name = p.HostName
		}
		fp := fleet.Peer{Name: name, DNSName: dns, IPs: []string{}, Online: p.Online}
		for _, ip := range p.TailscaleIPs {
			fp.IPs = append(fp.IPs, ip.String())
		}
		if p.Tags != nil {
			fp.Tags = p.Tags.AsSlice()
		}
		peers = append(peers, fp)
	}
	return peers, nil
}

// RelayWait bounds how long Peers waits for a node just up to find its
// home relay.
const RelayWait = 10 * time.Second

// waitRelay returns the node's status once it knows its home DERP relay,
// polling every 20ms for at most RelayWait (then the status as it is). A
// node just up (the CLI's own, --tsnet) cannot send a packet to any peer
// before its network check has picked the relay, which can take seconds;
// the fleet's per-peer bound must not be spent on that wait, or every
// broker would look unreachable to a fresh node.
func (n *Node) waitRelay(ctx context.Context, lc *local.Client) (*ipnstate.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, RelayWait)
	defer cancel()
	for {
		st, err := lc.Status(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			return nil, err
		case err != nil:
			return lc.Status(context.WithoutCancel(ctx))
		case st.Self != nil && st.Self.Relay != "":
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Status is the node's state now, for GET /v1/tailnet (`mcpx doctor`):
// running, needs login (with the URL, when control gave one), needs an
// administrator's approval, starting, or stopped (also once closed).
func (n *Node) Status(ctx context.Context) wire.TailnetStatus {
	n.mu.Lock()
	lc, closed, info := n.lc, n.closed, n.info
	n.mu.Unlock()
	if lc == nil || closed {
		return wire.TailnetStatus{State: wire.TailnetStopped}
	}
	st, err := lc.StatusWithoutPeers(ctx)
	if err != nil {
		return wire.TailnetStatus{State: wire.TailnetStopped, Health: []string{"the node does not answer: " + err.Error()}}
	}
	out := wire.TailnetStatus{AuthURL: st.AuthURL, Health: st.Health}
	if st.Self != nil {
		info = infoOf(st)
	}
	if info.DNSName != "" {
		out.Node = &wire.NodeInfo{Name: info.Name, DNSName: info.DNSName, IPs: []string{}}
		for _, ip := range info.IPs {
			out.Node.IPs = append(out.Node.IPs, ip.String())
		}
	}
	switch st.BackendState {
	case ipn.Running.String():
		out.State = wire.TailnetRunning
	case ipn.NeedsLogin.String():
		out.State = wire.TailnetNeedsLogin
	case ipn.NeedsMachineAuth.String():
		out.State = wire.TailnetNeedsMachineAuth
	case ipn.Starting.String(), ipn.NoState.String():
		out.State = wire.TailnetStarting
	default:
		out.State = wire.TailnetStopped
	}
	return out
}
