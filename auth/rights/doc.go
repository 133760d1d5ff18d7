// Package rights is what a caller of the broker may do: a list of rules,
// as a tailnet grant lists its elements, each checked whole.
//
//	r := rights.Rights{
//		{Servers: []string{"demo"}, Roots: []string{"/r/granted"}, Scopes: []string{"cwd", "worktree"}},
//		{Servers: []string{"hiddenvault"}, Roots: []string{"/r/other"}},
//	}
//	r.Allows(rights.Use{Server: "demo", Dir: "/r/granted/src", Scope: "cwd"})  // true: the first rule
//	r.Allows(rights.Use{Server: "demo", Dir: "/r/other", Scope: "cwd"})        // false: no one rule allows all three
//	t := rights.Rights{{Servers: []string{"github"}, Tools: []string{"github.get_*"}}}
//	t.Allows(rights.Use{Server: "github", Tool: "get_issue"})  // true
//	t.Allows(rights.Use{Server: "github", Tool: "merge_pr"})   // false: tools deny by default
//	err := r.Check(rights.Use{Server: "demo", Dir: "/r/granted", Scope: "global"}) // a *Denial naming the scope
//
// It is a leaf (the standard library only) read by auth (a token carries
// Rights), tsnet (a grant's elements are Rules), wire (whoami and the
// token documents show them) and the broker (the one authorization of a
// call).
//
// # Rules
//
// A [Use] is one use of a server: its name, the declared cwd (canonical)
// and the scope kind the call will use. [Rights.Allows] it when one [Rule]
// allows its server, its directory and its scope together; rules are never
// merged field by field, which would let one rule's roots or scopes widen
// another's servers. A Use's empty field is not checked, so
// Use{Server: s} asks whether the caller may use s at all (somewhere, some
// way) and Use{Dir: d} whether any rule reaches d.
//
// In a Rule, a nil list has no limit and an empty one allows nothing:
// Servers nil is every server, [] none, "*" every; Roots nil is anywhere,
// [] only calls that declare no cwd, "/" anywhere; Scopes nil is every
// kind, [] none, "*" every; Tools nil is every tool of the rule's servers,
// [] none. The zero Rights (no rule) allow nothing; [All] is one rule with
// no limit.
//
// # Tools
//
// A rule's Tools are globs over "server.tool" ([ToolName]) in which * is
// the only wildcard, matching any run of characters, dots included:
// "github.get_*", "fs.read_*", "github.*" (every tool of github), "*"
// (every tool). Once a rule has them, it allows only the tools they match:
// deny by default. A Use's Tool is checked with the rest of the rule, so
// a tool is allowed when one rule allows its server, directory, scope and
// the tool together; [Rights.Tools] is the same test for a whole listing
// (which tools of a server a caller may see at one use of it).
// [CheckPattern] refuses what is not a pattern (empty, no dot and no *,
// ?, [ and the other wildcards of fuller globs). Tools bound tool calls
// and listings only: the rule's servers are still the caller's, with
// their resources and prompts.
//
// # Admin, metrics and project config
//
// Admin is a right of the caller, not of a call: it lets the caller stop
// instances, manage others' sessions and tokens, which name no server, no
// directory and no scope a rule could bound. [Rights.Admin] is true when
// any rule says admin.
//
// Metrics is a scraper's right: it lets the caller read the daemon's
// Prometheus metrics and its fleet's service discovery (GET /metrics, GET
// /v1/fleet/sd) and nothing else, so a Prometheus server needs no admin
// grant. [Rights.Metrics] is true when any rule says metrics or admin.
//
// ProjectConfig is a rule's, by directory: project files (config.json
// found upward from the caller's cwd) define servers for the caller only
// in directories under the roots of a rule that says projectConfig
// ([Rights.ProjectConfig]). It is not bounded by the rule's servers or
// scopes: a caller whose project files the daemon trusts can have them
// define any server under any name, so a server bound would be no bound;
// what the right does bound is which directories' files the daemon reads
// and runs for it. The servers such files define are then used like any
// other, through the rules that name them.
//
// # JSON
//
// Rights are a JSON array of rules; a rule's members are omitted exactly
// when they are nil, so an empty list ("no server") and an absent one
// ("every server") survive a round trip:
//
//	[{"servers":["demo"],"roots":["/r/granted"],"scopes":["cwd","worktree"]},
//	 {"servers":["hiddenvault"],"roots":["/r/other"]}]
//
// A tailnet grant element and a token request are written the other way,
// nothing granted by omission; [Rule.Granted] reads them.
package rights
