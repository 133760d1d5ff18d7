package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"mcpx.dev/mcpx/internal/tsident"
)

// Server names are turned into other names, which must stay apart as the
// servers' names are:
//
//   - The MCP endpoint's aggregate (/mcp) names each tool and prompt
//     `<server>__<name>` within 64 characters (package mcpserver). For
//     names to be unique by construction, no server's prefix (its name and
//     "__") may begin another's, and a server's name must leave room for
//     its tools'.
//   - The TypeScript client gives each server a namespace named after it
//     (tsident.Value: "a-b" and "a_b" are both aB). Two servers with one
//     namespace would have one of them renamed (aB_2) where a script
//     cannot guess it.

// MaxServerNameLen is the longest server name: 40 characters leave a
// tool's part at least 22 of the 64 an aggregate name may have.
const MaxServerNameLen = 40

// nameClash is one way two server names can collide in what is made of
// them: it returns the problem and its fix, or "" if a and b stay apart.
type nameClash func(a, b string) (problem, fix string)

// nameClashes are the ways server names may collide.
var nameClashes = []nameClash{
	func(a, b string) (string, string) {
		if !strings.HasPrefix(b+"__", a+"__") && !strings.HasPrefix(a+"__", b+"__") {
			return "", ""
		}
		return fmt.Sprintf("servers %q and %q would give tools of one the names of the other's on /mcp (%q begins %q)", a, b, b+"__", a+"__"),
			"rename one so that neither name followed by __ begins the other"
	},
	func(a, b string) (string, string) {
		ns := tsident.Value(a, "server")
		if ns != tsident.Value(b, "server") {
			return "", ""
		}
		return fmt.Sprintf("servers %q and %q would share the TypeScript client's namespace %s", a, b, ns),
			"rename one so that the two differ in more than punctuation"
	},
}

// checkServerNames refuses server names too long to prefix their tools'
// and two servers whose names collide (nameClashes), naming both.
func (p *problems) checkServerNames(servers map[string]*Server) {
	names := slices.Sorted(maps.Keys(servers))
	for i, a := range names {
		if len(a) > MaxServerNameLen && serverName.MatchString(a) {
			p.add(a, "", fmt.Sprintf("server name is %d characters long; the most is %d", len(a), MaxServerNameLen),
				"shorten it: /mcp lists its tools as <server>__<tool> within the 64 characters MCP clients accept")
		}
		for _, b := range names[i+1:] {
			for _, clash := range nameClashes {
				if problem, fix := clash(a, b); problem != "" {
					p.add(b, "", problem, fix)
					break // one problem a pair
				}
			}
		}
	}
}
