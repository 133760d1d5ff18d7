package tsnet

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"tailscale.com/client/tailscale/apitype"
	"tailscale.com/tailcfg"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/wire"
)

// DefaultCapability is the app capability Identify reads when
// Node.Capability is "".
const DefaultCapability = "mcpx.dev/cap/broker"

// Identify names the caller of a request that came in on the node's
// listener, for api.ServeOptions.Identify: WhoIs on the connection's
// remote address gives the peer's login (or its tags, for a tagged node)
// and the grant that applies to it, read afresh on every request, so a
// policy change takes effect on the next one. Request headers are never
// read. A peer tailscale does not know, or one without a grant, is
// refused (a *broker.Error of KindForbidden, a 403 problem).
//
// Each element of the grant is one rule of the caller's rights
// (rights.Rule), as the tailnet policy writes it:
//
//	"grants": [{
//	  "src": ["group:dev"], "dst": ["tag:mcpx"],
//	  "app": {"mcpx.dev/cap/broker": [
//	    {"servers": ["demo", "github"], "roots": ["/home/dev/src"], "scopes": ["worktree"]},
//	    {"servers": ["*"], "roots": ["/srv/shared"], "admin": true}
//	  ]}
//	}]
//
// A call is allowed when one element allows its server, its cwd, its
// scope and its tool together: elements are never merged, so one
// element's roots or missing scope limit do not widen another's servers.
// Nothing is granted by omission (rights.Rule.Granted): no servers, no
// server ("*" = all); no roots, no declared cwd ("/" = anywhere). An
// element without scopes grants every kind, as before scopes existed:
// scopes narrow, they grant nothing by themselves; so do tools: without
// them every tool of the element's servers, with them (globs over
// server.tool, "github.get_*") only those they match. Admin is the
// caller's if any element says so, and so is metrics (a Prometheus
// server's grant: /metrics and /v1/fleet/sd, nothing else, e.g.
// {"metrics": true}); projectConfig trusts the project files in its own
// element's roots.
// Granted roots are canonicalised; one that does not exist is dropped.
func (n *Node) Identify(r *http.Request) (broker.Caller, error) {
	return n.WhoIs(r.Context(), r.RemoteAddr)
}

// WhoIs is Identify for a tailnet address ("100.64.0.7", or with a port)
// rather than a request: the peer there and its grant now. The public face
// asks it at each use of a token a tailnet identity approved
// (api.Tailnet.WhoIs): a peer gone from the tailnet, or whose grant no
// longer covers the token's rights, ends the token.
func (n *Node) WhoIs(ctx context.Context, addr string) (broker.Caller, error) {
	n.mu.Lock()
	lc := n.lc
	n.mu.Unlock()
	if lc == nil {
		return broker.Caller{}, refuse("the tailnet node is not up", "", errNotUp)
	}
	who, err := lc.WhoIs(ctx, addr)
	if err != nil {
		return broker.Caller{}, refuse("the tailnet does not know this peer", "", err)
	}
	capName := cmp.Or(n.Capability, DefaultCapability)
	elems, err := tailcfg.UnmarshalCapJSON[rights.Rule](who.CapMap, tailcfg.PeerCapability(capName))
	if err != nil {
		return broker.Caller{}, refuse(fmt.Sprintf("the tailnet grant %s of this peer is malformed: %v", capName, err),
			"fix the grant in the tailnet policy: each element is {servers, roots, scopes, tools, admin, metrics, projectConfig, rate, burst}, rate as \"100/m\" (also /s and /h)", err)
	}
	name := callerName(who)
	if len(elems) == 0 {
		// Named, with no rights, so that the tokens it minted die (api).
		return broker.Caller{Name: name, Via: wire.ViaTailnet, Rights: rights.None()}, refuse(fmt.Sprintf("%s has no tailnet grant of %s to this broker", name, capName),
			fmt.Sprintf(`ask the tailnet admin to grant %s to this node, e.g. {"servers": ["*"], "roots": ["/home/you/src"]}`, capName), nil)
	}
	granted := make(rights.Rights, len(elems))
	for i, e := range elems {
		granted[i] = e.Granted()
	}
	if err := broker.CheckRights(granted); err != nil {
		return broker.Caller{}, refuse(fmt.Sprintf("the tailnet grant %s of this peer is malformed: %v", capName, err),
			fmt.Sprintf("fix the grant's \"scopes\" or \"tools\" in the tailnet policy: scopes are %v, or \"*\"; tools are globs over server.tool with * as the only wildcard", config.ScopeKinds()), nil)
	}
	return broker.Caller{Name: name, Via: wire.ViaTailnet, Rights: granted.Canonical()}, nil
}

// callerName is the login of the peer's user, or its tags for a tagged node
// (whose "user" is a placeholder shared by every tagged node).
func callerName(who *apitype.WhoIsResponse) string {
	if who.Node != nil && len(who.Node.Tags) > 0 {
		return strings.Join(who.Node.Tags, ",")
	}
	if who.UserProfile != nil && who.UserProfile.LoginName != "" {
		return who.UserProfile.LoginName
	}
	if who.Node != nil {
		return "node:" + strings.TrimSuffix(who.Node.Name, ".")
	}
	return "tailnet:unknown"
}

func refuse(msg, hint string, err error) error {
	return &broker.Error{Kind: broker.KindForbidden, Op: "authenticate", Msg: msg, Hint: hint, Err: err}
}

// OwnHost reports whether a request's Host header names this node: its
// short name, its MagicDNS name (with or without the final dot) or one of
// its tailnet addresses, with or without a port. It is the listener's
// api.ServeOptions.Host: a web page whose name was made to resolve to the
// node's address (DNS rebinding) sends its own name, and is refused.
func (n *Node) OwnHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ".")
	info := n.Info()
	if host == "" {
		return false
	}
	if strings.EqualFold(host, info.Name) || strings.EqualFold(host, info.DNSName) {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && slices.Contains(info.IPs, a.Unmap())
}
