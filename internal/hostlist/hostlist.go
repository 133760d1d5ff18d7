// Package hostlist is the grammar of egress allowlists: the host names,
// name patterns and IP addresses (each with its ports) a confined child
// may reach through the daemon's egress proxy. The config checks a
// server's "sandbox": {"network": [...]} with it, and the proxy (package
// mcpx.dev/mcpx/pool/proc/egress) matches every request against it.
//
//	a, err := hostlist.Parse([]string{"api.github.com", "*.npmjs.org", "registry.local:4873"})
//	err = a.Allows("registry.npmjs.org", 443) // nil: allowed
//	err = a.Allows("npmjs.org", 443)          // a *Refusal saying why
package hostlist

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// defaultPorts are the ports an entry without ":port" allows: HTTPS first.
var defaultPorts = []uint16{443, 80}

// An Allowlist is one binding's parsed allowlist: which host names, name
// patterns and IP addresses a confined child may reach, each on which
// ports. The zero Allowlist allows nothing. It is immutable once parsed and
// safe for concurrent use.
type Allowlist struct {
	names    map[string][]uint16     // exact names, lower case, no trailing dot
	patterns []pattern               // "*.suffix" entries
	addrs    map[netip.Addr][]uint16 // IP literals, unmapped
}

// pattern is a "*.suffix" entry: a name matches when it is one or more
// whole labels followed by ".suffix".
type pattern struct {
	dotSuffix string // ".npmjs.org"
	ports     []uint16
}

// Parse parses allowlist entries:
//
//	api.github.com        the name itself, ports 443 and 80
//	*.npmjs.org           any name one or more labels under npmjs.org
//	                      (registry.npmjs.org, a.b.npmjs.org), never npmjs.org
//	                      itself: list it too if it is meant
//	registry.local:4873   the name on port 4873 only
//	203.0.113.7           an IP address, ports 443 and 80
//	[2001:db8::7]:8443    an IPv6 address on port 8443
//
// Names are matched without regard to case, and a trailing dot is
// tolerated. Repeating a host with other ports adds those ports. The error
// names every bad entry by its index and says how to write it.
func Parse(entries []string) (*Allowlist, error) {
	a := &Allowlist{names: map[string][]uint16{}, addrs: map[netip.Addr][]uint16{}}
	var errs []error
	for i, e := range entries {
		if err := a.add(e); err != nil {
			errs = append(errs, fmt.Errorf("allow[%d] %q: %w", i, e, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return a, nil
}

func (a *Allowlist) add(entry string) error {
	host, ports, err := splitEntry(strings.TrimSpace(entry))
	if err != nil {
		return err
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return errors.New("an address with a zone (%eth0) cannot be reached through the proxy; drop the zone")
		}
		addr = addr.Unmap()
		a.addrs[addr] = union(a.addrs[addr], ports)
		return nil
	}
	name, isPattern := strings.CutPrefix(host, "*.")
	if strings.Contains(name, "*") || (!isPattern && strings.Contains(host, "*")) {
		return errors.New(`"*" stands for whole labels at the left only, as in "*.example.com"`)
	}
	name, err = canonName(name)
	if err != nil {
		return err
	}
	if !isPattern {
		a.names[name] = union(a.names[name], ports)
		return nil
	}
	if !strings.Contains(name, ".") {
		return fmt.Errorf("a pattern over a whole top-level domain allows most of the internet; name the domain, as in \"*.example.%s\"", name)
	}
	for i := range a.patterns {
		if a.patterns[i].dotSuffix == "."+name {
			a.patterns[i].ports = union(a.patterns[i].ports, ports)
			return nil
		}
	}
	a.patterns = append(a.patterns, pattern{dotSuffix: "." + name, ports: ports})
	return nil
}

// splitEntry splits an entry into its host and its ports (the default ports
// when it names none), refusing what looks like a URL.
func splitEntry(e string) (host string, ports []uint16, err error) {
	switch {
	case e == "":
		return "", nil, errors.New("empty entry; name a host, as in \"api.github.com\"")
	case e == "*":
		return "", nil, errors.New(`"*" alone would allow every host; name the hosts, or give the server the network "all"`)
	case strings.Contains(e, "://"):
		return "", nil, fmt.Errorf("name the host, not a URL: %q", urlHost(e))
	case strings.ContainsAny(e, "/?#@ "):
		return "", nil, errors.New("a host name, pattern or address has no path, query, user or spaces")
	}
	if _, err := netip.ParseAddr(e); err == nil { // a bare IPv6 address has colons but no port
		return e, defaultPorts, nil
	}
	if inner, ok := strings.CutPrefix(e, "["); ok && strings.HasSuffix(inner, "]") {
		if _, err := netip.ParseAddr(strings.TrimSuffix(inner, "]")); err == nil {
			return strings.TrimSuffix(inner, "]"), defaultPorts, nil
		}
	}
	if !strings.Contains(e, ":") {
		return e, defaultPorts, nil
	}
	h, p, err := net.SplitHostPort(e)
	if err != nil {
		return "", nil, fmt.Errorf("not host or host:port (%v); write an IPv6 address with a port as \"[2001:db8::1]:443\"", err)
	}
	port, err := parsePort(p)
	if err != nil {
		return "", nil, err
	}
	if strings.Contains(e, "[") {
		if _, err := netip.ParseAddr(h); err != nil {
			return "", nil, errors.New("only IPv6 addresses go in brackets")
		}
	}
	return h, []uint16{port}, nil
}

// urlHost is the host:port of what looks like a URL, for the suggestion.
func urlHost(s string) string {
	_, rest, _ := strings.Cut(s, "://")
	rest, _, _ = strings.Cut(rest, "/")
	if _, after, ok := strings.Cut(rest, "@"); ok {
		rest = after
	}
	return rest
}

func parsePort(p string) (uint16, error) {
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	return uint16(n), nil
}

// canonName lower-cases a host name, drops one trailing dot, and checks it
// is a DNS name in ASCII: labels of letters, digits, '-' and '_', each 1–63
// long, 253 in all, the last not numeric (so "127.1" and "0x7f.1", which
// some resolvers read as addresses, are not names).
func canonName(s string) (string, error) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" {
		return "", errors.New("empty host name")
	}
	if len(s) > 253 {
		return "", errors.New("a host name is at most 253 characters")
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", errors.New("each label of a host name is 1 to 63 characters")
		}
		for _, c := range []byte(l) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				if c >= 0x80 {
					return "", errors.New("an international name must be written in its xn-- (punycode) form")
				}
				return "", fmt.Errorf("%q is not allowed in a host name", c)
			}
		}
	}
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") {
		return "", errors.New("not a host name nor an IP address in its usual form (a.b.c.d or IPv6)")
	}
	return s, nil
}

// union adds ports to have, keeping the order and no duplicates. It never
// modifies have's backing array (defaultPorts is shared).
func union(have, ports []uint16) []uint16 {
	out := slices.Clone(have)
	for _, p := range ports {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Allows reports whether the allowlist lets a child reach host on port,
// host being what the child asked for: a name, or an IP address (IPv6 with
// or without brackets). A refusal is a *Refusal saying why.
func (a *Allowlist) Allows(host string, port int) error {
	_, err := a.Match(host, port)
	return err
}

// Match is Allows that also returns the target in canonical form: a
// lower-case name without trailing dot, or an address (then Literal).
func (a *Allowlist) Match(host string, port int) (Target, error) {
	refuse := func(why string) (Target, error) {
		return Target{}, &Refusal{Host: host, Port: port, Why: why}
	}
	if port < 1 || port > 65535 {
		return refuse("no port, or a port out of range")
	}
	p := uint16(port)
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if addr, err := netip.ParseAddr(h); err == nil {
		if addr.Zone() != "" {
			return refuse("an address with a zone is never reached")
		}
		addr = addr.Unmap()
		ports, ok := a.addrs[addr]
		if !ok {
			return refuse("an IP address not in the allowlist (list it literally to allow it)")
		}
		if !slices.Contains(ports, p) {
			return refuse("port not allowed for this address (allowed: " + portList(ports) + ")")
		}
		return Target{Addr: addr, Port: p, Literal: true}, nil
	}
	name, err := canonName(host)
	if err != nil {
		return refuse(err.Error())
	}
	if ports, ok := a.names[name]; ok {
		if slices.Contains(ports, p) {
			return Target{Name: name, Port: p}, nil
		}
		return refuse("port not allowed for this host (allowed: " + portList(ports) + ")")
	}
	var near []uint16 // ports of matching patterns, for the message
	for _, pt := range a.patterns {
		if strings.HasSuffix(name, pt.dotSuffix) && len(name) > len(pt.dotSuffix) {
			if slices.Contains(pt.ports, p) {
				return Target{Name: name, Port: p}, nil
			}
			near = union(near, pt.ports)
		}
	}
	if near != nil {
		return refuse("port not allowed for this host (allowed: " + portList(near) + ")")
	}
	return refuse("host not in the allowlist")
}

// Listed reports whether the allowlist names addr literally on port.
func (a *Allowlist) Listed(addr netip.Addr, port uint16) bool {
	return slices.Contains(a.addrs[addr.Unmap()], port)
}

func portList(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

// Target is an allowed destination: a name to resolve, or a listed address.
type Target struct {
	Name    string
	Addr    netip.Addr
	Port    uint16
	Literal bool // Addr was asked for and is listed: no address check
}

// A Refusal is why the proxy did not connect a child to a host. The child
// receives it as the body of a 403 response; the proxy logs and counts it.
type Refusal struct {
	Host string // as the child asked for it
	Port int
	Why  string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("egress to %s refused: %s", net.JoinHostPort(r.Host, strconv.Itoa(r.Port)), r.Why)
}
