package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The MCP endpoint's aggregate (/mcp) names each tool and prompt
// `<server>__<name>` within 64 characters (package mcpserver). For names to
// be unique by construction, no server's prefix (its name and "__") may
// begin another's, and a server's name must leave room for its tools'.

// MaxServerNameLen is the longest server name: 40 characters leave a
// tool's part at least 22 of the 64 an aggregate name may have.
const MaxServerNameLen = 40

// checkPrefixes refuses server names too long to prefix their tools' and
// two servers whose prefixes overlap, naming both.
func (p *problems) checkPrefixes(servers map[string]*Server) {
	names := slices.Sorted(maps.Keys(servers))
	for i, a := range names {
		if len(a) > MaxServerNameLen && serverName.MatchString(a) {
			p.add(a, "", fmt.Sprintf("server name is %d characters long; the most is %d", len(a), MaxServerNameLen),
				"shorten it: /mcp lists its tools as <server>__<tool> within the 64 characters MCP clients accept")
		}
		for _, b := range names[i+1:] {
			if strings.HasPrefix(b+"__", a+"__") || strings.HasPrefix(a+"__", b+"__") {
				p.add(b, "", fmt.Sprintf("servers %q and %q would give tools of one the names of the other's on /mcp (%q begins %q)", a, b, b+"__", a+"__"),
					"rename one so that neither name followed by __ begins the other")
			}
		}
	}
}
