package tsnet

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"

	"tailscale.com/client/tailscale/apitype"
	"tailscale.com/tailcfg"

	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/broker/config"
)

// DefaultCapability is the app capability Identify reads when
// Node.Capability is "".
const DefaultCapability = "mcpx.dev/cap/broker"

// Rule is one element of the broker's app-capability grant, as the tailnet
// policy writes it:
//
//	"grants": [{
//	  "src": ["group:dev"], "dst": ["tag:mcpx"],
//	  "app": {"mcpx.dev/cap/broker": [
//	    {"servers": ["demo", "github"], "roots": ["/home/dev/src"]},
//	    {"servers": ["*"], "admin": true}
//	  ]}
//	}]
//
// A caller's rights are the union of every element that applies to it:
// servers and roots are joined, admin is true if any element says so.
// Nothing is granted by omission: no servers, no server ("*" = all); no
// roots, no declared cwd ("/" = anywhere).
type Rule struct {
	Servers []string `json:"servers,omitempty"`
	Roots   []string `json:"roots,omitempty"`
	// Scopes limits the scope kinds ("repo", "session", … or "*") the
	// element's calls may use (broker.Caller.MayUseScope). An element that
	// names none grants every kind, as before scopes existed: scopes narrow
	// the servers an element grants, they grant nothing by themselves.
	Scopes []string `json:"scopes,omitempty"`
	Admin  bool     `json:"admin,omitempty"`
	// ProjectConfig lets the caller's project files (config.json found
	// upward from its cwd) define its servers (broker.Caller.ProjectConfig).
	ProjectConfig bool `json:"projectConfig,omitempty"`
}

// Identify names the caller of a request that came in on the node's
// listener, for api.ServeOptions.Identify: WhoIs on the connection's
// remote address gives the peer's login (or its tags, for a tagged node)
// and the grant that applies to it, read afresh on every request, so a
// policy change takes effect on the next one. Request headers are never
// read. A peer tailscale does not know, or one without a grant, is
// refused (a *broker.Error of KindForbidden, a 403 problem).
func (n *Node) Identify(r *http.Request) (broker.Caller, error) {
	n.mu.Lock()
	lc := n.lc
	n.mu.Unlock()
	if lc == nil {
		return broker.Caller{}, refuse("the tailnet node is not up", "", errNotUp)
	}
	who, err := lc.WhoIs(r.Context(), r.RemoteAddr)
	if err != nil {
		return broker.Caller{}, refuse("the tailnet does not know this peer", "", err)
	}
	capName := cmp.Or(n.Capability, DefaultCapability)
	rules, err := tailcfg.UnmarshalCapJSON[Rule](who.CapMap, tailcfg.PeerCapability(capName))
	if err != nil {
		return broker.Caller{}, refuse(fmt.Sprintf("the tailnet grant %s of this peer is malformed", capName),
			"fix the grant in the tailnet policy: each element is {servers, roots, scopes, admin}", err)
	}
	name := callerName(who)
	if len(rules) == 0 {
		return broker.Caller{}, refuse(fmt.Sprintf("%s has no tailnet grant of %s to this broker", name, capName),
			fmt.Sprintf(`ask the tailnet admin to grant %s to this node, e.g. {"servers": ["*"], "roots": ["/home/you/src"]}`, capName), nil)
	}
	c := broker.Caller{Name: name, Via: wire.ViaTailnet, Servers: []string{}, Roots: []string{}, Scopes: []config.ScopeKind{}}
	allScopes := false
	for _, rule := range rules {
		scopes, err := broker.ParseScopes(rule.Scopes)
		if err != nil {
			return broker.Caller{}, refuse(fmt.Sprintf("the tailnet grant %s of this peer is malformed: %v", capName, err),
				fmt.Sprintf("fix the grant's \"scopes\" in the tailnet policy: scopes are %v, or \"*\"", config.ScopeKinds()), nil)
		}
		allScopes = allScopes || scopes == nil || slices.Contains(scopes, "*")
		c.Scopes = append(c.Scopes, scopes...)
		c.Admin = c.Admin || rule.Admin
		c.ProjectConfig = c.ProjectConfig || rule.ProjectConfig
		c.Servers = append(c.Servers, rule.Servers...)
		for _, root := range rule.Roots {
			if canon, ok := canonicalRoot(root); ok {
				c.Roots = append(c.Roots, canon)
			}
		}
	}
	slices.Sort(c.Servers)
	c.Servers = slices.Compact(c.Servers)
	slices.Sort(c.Roots)
	c.Roots = slices.Compact(c.Roots)
	slices.Sort(c.Scopes)
	c.Scopes = slices.Compact(c.Scopes)
	if allScopes {
		c.Scopes = nil
	}
	return c, nil
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

// canonicalRoot makes a granted root comparable with the broker's canonical
// cwds: absolute, cleaned, symlinks resolved. A root that is relative or
// does not exist grants nothing (it is dropped).
func canonicalRoot(root string) (string, bool) {
	if !filepath.IsAbs(root) {
		return "", false
	}
	canon, err := filepath.EvalSymlinks(filepath.Clean(root))
	if err != nil {
		return "", false
	}
	return canon, true
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
