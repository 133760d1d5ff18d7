package rights

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Rights are a caller's rights: a list of rules, each checked whole. The
// zero Rights allow nothing. A Rights value is never modified by its
// methods; the caller owns it.
type Rights []Rule

// Rule is one element of a caller's rights: the servers it allows, where
// and how. A nil list has no limit, an empty one allows nothing.
type Rule struct {
	// Servers the rule allows ("*" = every one); nil = every server, [] =
	// none.
	Servers []string `json:"servers,omitzero"`
	// Roots are canonical absolute directories under which a declared cwd
	// must lie ("/" = anywhere); nil = anywhere, [] = only calls that
	// declare no cwd.
	Roots []string `json:"roots,omitzero"`
	// Scopes are the scope kinds the rule's calls may use ("repo",
	// "session", … or "*" = every kind); nil = every kind, [] = none.
	Scopes []string `json:"scopes,omitzero"`
	// Tools are tool patterns, globs over "server.tool" (ToolName,
	// MatchTool): the tools of the rule's servers it allows; nil = every
	// tool, [] = none. They bound tool calls and which tools a listing
	// shows, not the use of a server: a rule whose patterns match none of
	// a server's tools still lets the caller see the server, its resources
	// and prompts.
	Tools []string `json:"tools,omitzero"`
	// Admin makes the caller an admin (Rights.Admin).
	Admin bool `json:"admin,omitempty"`
	// Metrics lets the caller read the daemon's Prometheus metrics and its
	// fleet's service discovery (Rights.Metrics), and nothing else an
	// admin may: a scraper's right.
	Metrics bool `json:"metrics,omitempty"`
	// ProjectConfig lets the project files in the rule's roots define the
	// caller's servers (Rights.ProjectConfig).
	ProjectConfig bool `json:"projectConfig,omitempty"`
	// Code lets the caller run code on the daemon's machine: the MCP
	// endpoint's code-mode run tool (Rights.Code), confined to the rule's
	// roots and servers.
	Code bool `json:"code,omitempty"`
	// MCPMode is the tool surface the caller's MCP clients get on /mcp
	// when they ask for none: "tools" (every tool), "code" (search and
	// run) or "both"; "" = the config's mcp.mode. It grants nothing: run
	// needs Code.
	MCPMode string `json:"mcpMode,omitempty"`
	// Rate limits the caller's calls (tool calls and the requests passed
	// on to a child), all its rules together: the tightest rate a rule
	// names is the caller's (Rights.Limit). The zero Rate is no limit.
	Rate Rate `json:"rate,omitzero"`
	// Burst is how many calls may come at once under Rate; 0 = its count.
	Burst int `json:"burst,omitempty"`
}

// All is every right: one rule with no limit that says admin and
// projectConfig, the rights of the daemon's owner.
func All() Rights { return Rights{{Admin: true, ProjectConfig: true, Code: true}} }

// None is no right at all, written as a list (the zero Rights are none
// too).
func None() Rights { return Rights{} }

// Granted returns g read as a tailnet grant element or a token request
// writes it: nothing is granted by omission, so absent servers are no
// server and absent roots no declared cwd. Absent scopes stay every kind
// and absent tools every tool: scopes and tools only narrow what a rule's
// servers and roots grant.
func (g Rule) Granted() Rule {
	if g.Servers == nil {
		g.Servers = []string{}
	}
	if g.Roots == nil {
		g.Roots = []string{}
	}
	return g
}

// Use is one use of a server that one rule must allow whole. An empty
// field is not checked: Use{Server: s} is any use of s.
type Use struct {
	Server string // the server's name
	Dir    string // the declared cwd, canonical ("" = none declared)
	Scope  string // the scope kind the call will use
	Tool   string // the tool called, its name within Server ("" = none)
}

// Allows reports whether one rule of r allows u whole.
func (r Rights) Allows(u Use) bool {
	return slices.ContainsFunc(r, func(e Rule) bool { return e.allows(u) })
}

// MayUse reports whether some rule names server: whether the caller may use
// it at all. To a caller that may not, the server does not exist.
func (r Rights) MayUse(server string) bool { return r.Allows(Use{Server: server}) }

// MayUseDir reports whether some rule reaches the canonical directory dir.
func (r Rights) MayUseDir(dir string) bool { return r.Allows(Use{Dir: dir}) }

// Admin reports whether the caller is an admin: any rule says so.
func (r Rights) Admin() bool {
	return slices.ContainsFunc(r, func(e Rule) bool { return e.Admin })
}

// Metrics reports whether the caller may read the metrics (/metrics and
// the fleet's service discovery): any rule says metrics or admin.
func (r Rights) Metrics() bool {
	return slices.ContainsFunc(r, func(e Rule) bool { return e.Metrics || e.Admin })
}

// Code reports whether the caller may run code on the daemon's machine
// (the MCP endpoint's code mode): any rule says code.
func (r Rights) Code() bool {
	return slices.ContainsFunc(r, func(e Rule) bool { return e.Code })
}

// MCPModes are the values of Rule.MCPMode.
var MCPModes = []string{"tools", "code", "both"}

// MCPMode is the MCP tool surface the first rule that names one says; ""
// when none does.
func (r Rights) MCPMode() string {
	for _, e := range r {
		if e.MCPMode != "" {
			return e.MCPMode
		}
	}
	return ""
}

// CheckMCPModes returns an error naming a rule's mcpMode that is not one
// of MCPModes.
func (r Rights) CheckMCPModes() error {
	for _, e := range r {
		if e.MCPMode != "" && !slices.Contains(MCPModes, e.MCPMode) {
			return fmt.Errorf("mcpMode %q: want one of %s", e.MCPMode, strings.Join(MCPModes, ", "))
		}
	}
	return nil
}

// RootsOf returns the roots under which the rules that name server let
// the caller work: anywhere (true) when one of them has no roots (nil),
// else the union of their roots (none when no rule names server). A
// confined child's writable paths are kept within them (docs/sandbox.md).
func (r Rights) RootsOf(server string) (roots []string, anywhere bool) {
	for _, e := range r {
		if !e.allowsServer(server) {
			continue
		}
		if e.Roots == nil {
			return nil, true
		}
		for _, root := range e.Roots {
			if root = filepath.Clean(root); !slices.Contains(roots, root) {
				roots = append(roots, root)
			}
		}
	}
	return roots, false
}

// ProjectConfig reports whether the project files in the canonical
// directory dir may define the caller's servers: a rule that says
// projectConfig reaches dir. dir "" asks whether any rule says so.
func (r Rights) ProjectConfig(dir string) bool {
	return slices.ContainsFunc(r, func(e Rule) bool { return e.ProjectConfig && e.allowsDir(dir) })
}

func (e Rule) allows(u Use) bool {
	return e.allowsServer(u.Server) && e.allowsDir(u.Dir) && e.allowsScope(u.Scope) && e.allowsTool(u.Server, u.Tool)
}

func (e Rule) allowsServer(s string) bool { return s == "" || anyOf(e.Servers, s) }

func (e Rule) allowsScope(k string) bool { return k == "" || anyOf(e.Scopes, k) }

// allowsDir reports whether dir lies under one of e's roots. Both sides are
// canonical: roots are made so when the rights are read (Canonical).
func (e Rule) allowsDir(dir string) bool {
	if dir == "" || e.Roots == nil {
		return true
	}
	for _, root := range e.Roots {
		root = filepath.Clean(root)
		if dir == root || strings.HasPrefix(dir, strings.TrimSuffix(root, "/")+"/") {
			return true
		}
	}
	return false
}

// anyOf reports whether list allows v: nil (no limit), v itself or "*".
func anyOf(list []string, v string) bool {
	return list == nil || slices.Contains(list, v) || slices.Contains(list, "*")
}

// Part names a part of a Use.
type Part string

// The parts of a Use, in the order Check weighs them.
const (
	PartServer Part = "server"
	PartDir    Part = "dir"
	PartScope  Part = "scope"
	PartTool   Part = "tool"
)

// Denial is why Rights refuse a Use: its first part, in the order server,
// dir, scope, tool, that no rule allows together with the parts before it.
// Msg and Hint name only what the caller's own rules allow for the server;
// a tool's denial names the tool, never the patterns (to a remote caller,
// the broker answers it as a tool that does not exist).
type Denial struct {
	Use  Use
	Part Part
	Msg  string
	Hint string
}

func (d *Denial) Error() string { return d.Msg }

// Check returns nil if one rule of r allows u whole, else a *Denial.
func (r Rights) Check(u Use) error {
	if r.Allows(u) {
		return nil
	}
	named := Use{Server: u.Server}
	if !r.Allows(named) {
		return &Denial{Use: u, Part: PartServer, Msg: fmt.Sprintf("this caller may not use server %q", u.Server)}
	}
	at := Use{Server: u.Server, Dir: u.Dir}
	if !r.Allows(at) {
		return &Denial{Use: u, Part: PartDir, Msg: "the declared cwd is outside the roots this caller may use",
			Hint: r.rootsHint(u.Server)}
	}
	scoped := Use{Server: u.Server, Dir: u.Dir, Scope: u.Scope}
	if !r.Allows(scoped) {
		return &Denial{Use: u, Part: PartScope,
			Msg:  fmt.Sprintf("this call would use scope %q; this caller may use scopes: %s", u.Scope, r.scopesAt(at)),
			Hint: "ask for a grant or token that names this scope, or call a server of an allowed scope"}
	}
	return &Denial{Use: u, Part: PartTool, Msg: fmt.Sprintf("this caller may not use tool %q of server %q", u.Tool, u.Server)}
}

// rootsHint names the roots under which the rules that name server allow
// it. (Each such rule has roots: one without a limit would have allowed
// the cwd.)
func (r Rights) rootsHint(server string) string {
	roots := r.collect(Use{Server: server}, func(e Rule) []string { return e.Roots })
	if len(roots) == 0 {
		return fmt.Sprintf("this caller may use %s only without a declared cwd", server)
	}
	return fmt.Sprintf("this caller may use %s under %s", server, strings.Join(roots, ", "))
}

// scopesAt lists the scopes of the rules that allow u (whose Scope is
// empty), in the order they name them; "none" if none. (Each such rule
// lists its scopes: one without a limit would have allowed the scope.)
func (r Rights) scopesAt(u Use) string {
	scopes := r.collect(u, func(e Rule) []string { return e.Scopes })
	if len(scopes) == 0 {
		return "none"
	}
	return strings.Join(scopes, ", ")
}

// collect is what list gives of each rule that allows u, in order, each
// value once.
func (r Rights) collect(u Use, list func(Rule) []string) []string {
	var out []string
	for _, e := range r {
		if e.allows(u) {
			out = appendNew(out, list(e)...)
		}
	}
	return out
}

func appendNew(list []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// String is r's JSON form.
func (r Rights) String() string {
	b, _ := json.Marshal(r) // plain strings and booleans: it always marshals
	return string(b)
}
