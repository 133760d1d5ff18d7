package rights

import (
	"fmt"
	"slices"
	"strings"
)

// Tool patterns: a rule's Tools are globs over "server.tool", the server's
// name, a dot, and the tool's name as the child lists it. A server's name
// holds no dot (letters, digits, _ and -), so the first dot ends it; a
// tool's name may hold dots of its own.
//
// The glob has one wildcard: * matches any run of characters, none
// included, dots included ("github.*" is every tool of github, "*" every
// tool of every server, "github.get_*" those whose names begin get_).
// Every other character stands for itself and matching is case-sensitive.
// ?, [, ], {, } and \ are refused rather than read literally, so that a
// pattern written for a fuller glob is never silently narrower or wider.

// ToolName is the name a tool pattern matches: server "." tool.
func ToolName(server, tool string) string { return server + "." + tool }

// CheckPattern returns nil if p is a valid tool pattern, else an error
// naming it and saying why.
func CheckPattern(p string) error {
	bad := func(why string) error { return fmt.Errorf("tool pattern %q: %s", p, why) }
	switch {
	case p == "":
		return bad("empty; write server.tool, with * for any run of characters")
	case strings.ContainsAny(p, `?[]{}\`):
		return bad("only * is a wildcard here; ?, [, ], {, } and \\ are not allowed")
	case strings.IndexFunc(p, func(c rune) bool { return c <= ' ' || c == 0x7f }) >= 0:
		return bad("it holds a space or a control character")
	case !strings.ContainsAny(p, ".*"):
		return bad(`it names no tool: write server.tool, e.g. "github.get_issue" or "github.*"`)
	}
	return nil
}

// CheckTools returns an error naming the first tool pattern a rule of r
// names that is not valid (CheckPattern).
func (r Rights) CheckTools() error {
	for _, e := range r {
		for _, p := range e.Tools {
			if err := CheckPattern(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// MatchTool reports whether the tool pattern p matches name (a
// "server.tool", ToolName).
func MatchTool(p, name string) bool {
	parts := strings.Split(p, "*")
	if len(parts) == 1 {
		return p == name
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(name) < len(first)+len(last) || !strings.HasPrefix(name, first) || !strings.HasSuffix(name, last) {
		return false
	}
	// The middle parts in order, each at its earliest place: if any
	// placement fits, the earliest does.
	mid := name[len(first) : len(name)-len(last)]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(mid, part)
		if i < 0 {
			return false
		}
		mid = mid[i+len(part):]
	}
	return true
}

// allowsTool reports whether e allows tool of server: any tool when e has
// no tool limit, else those a pattern of e matches. An empty tool is not
// checked.
func (e Rule) allowsTool(server, tool string) bool {
	if tool == "" || e.Tools == nil {
		return true
	}
	name := ToolName(server, tool)
	return slices.ContainsFunc(e.Tools, func(p string) bool { return MatchTool(p, name) })
}

// ToolSet is which tools of one server a caller may use at one use of it
// (Rights.Tools). The zero ToolSet allows no tool.
type ToolSet struct {
	server   string
	all      bool
	patterns []string // of the rules that allow the use, each once
}

// Tools returns which tools of u.Server the rules of r that allow u (its
// server, directory and scope; u.Tool is ignored) allow: every tool if one
// of them has no tool limit, else those one of their patterns matches.
// Filtering a listing through it is the same as checking each tool's Use
// whole, one rule at a time.
func (r Rights) Tools(u Use) ToolSet {
	u.Tool = ""
	set := ToolSet{server: u.Server}
	for _, e := range r {
		if !e.allows(u) {
			continue
		}
		if e.Tools == nil {
			return ToolSet{server: u.Server, all: true}
		}
		set.patterns = appendNew(set.patterns, e.Tools...)
	}
	return set
}

// All reports whether the set holds every tool of its server: a listing
// needs no filter.
func (t ToolSet) All() bool { return t.all }

// Any reports whether the set may hold some tool of its server: false when
// no pattern could match one, so the server's tools need not be listed.
func (t ToolSet) Any() bool {
	return t.all || slices.ContainsFunc(t.patterns, func(p string) bool { return mayMatchServer(p, t.server) })
}

// Allows reports whether the set holds tool.
func (t ToolSet) Allows(tool string) bool {
	if t.all {
		return true
	}
	name := ToolName(t.server, tool)
	return slices.ContainsFunc(t.patterns, func(p string) bool { return MatchTool(p, name) })
}

// mayMatchServer reports whether p could match some tool of server: its
// literal start (up to its first *, or all of it) and server's "server."
// agree as far as both go, and a pattern without * names a tool past the
// dot.
func mayMatchServer(p, server string) bool {
	lit, star := literalStart(p)
	prefix := server + "."
	if !star {
		return len(lit) > len(prefix) && strings.HasPrefix(lit, prefix)
	}
	return strings.HasPrefix(lit, prefix) || strings.HasPrefix(prefix, lit)
}

// literalStart is p up to its first * and whether p has one.
func literalStart(p string) (lit string, star bool) {
	i := strings.IndexByte(p, '*')
	if i < 0 {
		return p, false
	}
	return p[:i], true
}

// patternWithin reports whether every name p matches, m matches too, as
// far as can be told cheaply: p is m; p names one tool that m matches; or
// m is a prefix glob "y*" and p's literal start begins with y. Anything
// else is not known to be within, and is treated as beyond.
func patternWithin(p, m string) bool {
	if p == m {
		return true
	}
	lit, star := literalStart(p)
	if !star {
		return MatchTool(m, p)
	}
	y, mstar := literalStart(m)
	return mstar && y+"*" == m && strings.HasPrefix(lit, y)
}

// forServer is p as it applies to server's tools: a pattern whose literal
// start is shorter than "server." and agrees with it ("*", "git*" for
// github) matches every tool of server, as "server.*" does.
func forServer(p, server string) string {
	lit, star := literalStart(p)
	if star && strings.HasPrefix(server+".", lit) {
		return server + ".*"
	}
	return p
}

// coversTools returns nil if one rule of r that allows u allows each tool
// of u.Server that tools allow (nil: every tool), else an *Excess naming
// the first pattern of tools that goes beyond. u.Server "*" stands for
// every server: the rules that allow it have no server limit; u.Server ""
// (no server) has no tool to cover.
func (r Rights) coversTools(u Use, tools []string) error {
	if u.Server == "" {
		return nil
	}
	set := r.Tools(u)
	if set.all {
		return nil
	}
	if tools == nil {
		return &Excess{Field: "tools", Value: "(all)"}
	}
	for _, p := range tools {
		q := p
		if u.Server != "*" {
			if !mayMatchServer(p, u.Server) {
				continue // a pattern for another of the rule's servers
			}
			q = forServer(p, u.Server)
		}
		if !slices.ContainsFunc(set.patterns, func(m string) bool { return patternWithin(q, m) }) {
			return &Excess{Field: "tools", Value: p}
		}
	}
	return nil
}
