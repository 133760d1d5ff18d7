package egress

import "mcpx.dev/mcpx/internal/hostlist"

// The allowlist's grammar is package hostlist's, a leaf, so that the
// config checks a server's host list with the very rules the proxy
// applies.

// An Allowlist is one binding's parsed allowlist (hostlist.Allowlist).
type Allowlist = hostlist.Allowlist

// A Refusal is why the proxy did not connect a child to a host. The child
// receives it as the body of a 403 response; the proxy logs and counts it.
type Refusal = hostlist.Refusal

// ParseAllow parses allowlist entries; see hostlist.Parse for the grammar:
//
//	api.github.com        the name itself, ports 443 and 80
//	*.npmjs.org           any name one or more labels under npmjs.org
//	                      (registry.npmjs.org, a.b.npmjs.org), never npmjs.org
//	                      itself: list it too if it is meant
//	registry.local:4873   the name on port 4873 only
//	203.0.113.7           an IP address, ports 443 and 80
//	[2001:db8::7]:8443    an IPv6 address on port 8443
func ParseAllow(entries []string) (*Allowlist, error) { return hostlist.Parse(entries) }
