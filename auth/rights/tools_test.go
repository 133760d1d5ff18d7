package rights_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
)

func TestMatchTool(t *testing.T) {
	for _, tc := range []struct {
		p, name string
		want    bool
	}{
		{"github.get_issue", "github.get_issue", true},
		{"github.get_issue", "github.get_issues", false},
		{"github.get_*", "github.get_issue", true},
		{"github.get_*", "github.get_", true},
		{"github.get_*", "github.list_issues", false},
		{"github.get_*", "githubx.get_issue", false},
		{"github.*", "github.a.b", true},
		{"github*", "githubx.y", true},
		{"*", "fs.read_file", true},
		{"*.read_*", "fs.read_file", true},
		{"*.read_*", "fs.write_file", false},
		{"fs.*_file", "fs.read_file", true},
		{"fs.*_file", "fs.read_files", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"a*bb*b", "abbb", true},
		{"a*bb*b", "abb", false}, // the middle and the end may not overlap
		{"a*bb*b", "abbxb", true},
		{"GitHub.*", "github.get", false}, // case-sensitive
		{"github.get?", "github.gets", false},
	} {
		if got := rights.MatchTool(tc.p, tc.name); got != tc.want {
			t.Errorf("MatchTool(%q, %q) = %v, want %v", tc.p, tc.name, got, tc.want)
		}
	}
}

func TestCheckPattern(t *testing.T) {
	for _, p := range []string{"github.get_*", "*", "github*", "fs.read_file", "a.b.c", "*.read_*"} {
		if err := rights.CheckPattern(p); err != nil {
			t.Errorf("CheckPattern(%q) = %v, want valid", p, err)
		}
	}
	for _, p := range []string{"", "github", "github.get?", "fs.[ab]", `fs.\*`, "fs.{a,b}", "fs. read", "fs.\tx"} {
		err := rights.CheckPattern(p)
		if q, _ := json.Marshal(p); err == nil || !strings.Contains(err.Error(), "tool pattern "+string(q)) {
			t.Errorf("CheckPattern(%q) = %v, want an error naming it", p, err)
		}
	}
	r := rights.Rights{{Tools: []string{"github.*"}}, {}, {Tools: []string{"fs.read_*", "fs.read?"}}}
	if err := r.CheckTools(); err == nil || !strings.Contains(err.Error(), `"fs.read?"`) {
		t.Errorf("CheckTools = %v, want an error naming fs.read?", err)
	}
	if err := (rights.Rights{{Tools: []string{}}, {}}).CheckTools(); err != nil {
		t.Errorf("CheckTools of no patterns: %v", err)
	}
}

// toolGrant: github's get_ tools anywhere under /r, every github tool under
// /r/admin, and fs with no tool limit.
var toolGrant = rights.Rights{
	{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{"github.get_*", "fs.read_*"}},
	{Servers: []string{"github"}, Roots: []string{"/r/admin"}, Scopes: []string{"cwd"}, Tools: []string{"github.*"}},
	{Servers: []string{"fs"}, Roots: []string{"/r"}},
	{Servers: []string{"vault"}, Tools: []string{}},
}

// TestToolsWholeRules: a tool is allowed when one rule allows its server,
// directory, scope and the tool together; tools deny by default.
func TestToolsWholeRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    rights.Use
		want bool
	}{
		{"a matching tool", rights.Use{Server: "github", Dir: "/r/x", Scope: "repo", Tool: "get_issue"}, true},
		{"a tool no pattern matches", rights.Use{Server: "github", Dir: "/r/x", Scope: "repo", Tool: "merge_pr"}, false},
		{"the wider rule, in its root and scope", rights.Use{Server: "github", Dir: "/r/admin/y", Scope: "cwd", Tool: "merge_pr"}, true},
		{"the wider rule's tools, another scope", rights.Use{Server: "github", Dir: "/r/admin/y", Scope: "repo", Tool: "merge_pr"}, false},
		{"the wider rule's tools, outside its root", rights.Use{Server: "github", Dir: "/r/x", Scope: "cwd", Tool: "merge_pr"}, false},
		{"a pattern for a server the rule does not name", rights.Use{Server: "fs", Dir: "/elsewhere", Tool: "read_file"}, false},
		{"no tool limit", rights.Use{Server: "fs", Dir: "/r", Tool: "write_file"}, true},
		{"tools [] is none", rights.Use{Server: "vault", Tool: "get"}, false},
		{"tools [] still lets the server be used", rights.Use{Server: "vault"}, true},
		{"no tool: the server", rights.Use{Server: "github", Dir: "/r/x", Scope: "repo"}, true},
		{"a server no rule names", rights.Use{Server: "other", Tool: "get_x"}, false},
		{"all", rights.Use{Server: "x", Tool: "y"}, true},
	} {
		r := toolGrant
		if tc.name == "all" {
			r = rights.All()
		}
		if got := r.Allows(tc.u); got != tc.want {
			t.Errorf("%s: Allows(%+v) = %v, want %v", tc.name, tc.u, got, tc.want)
		}
	}
	err := toolGrant.Check(rights.Use{Server: "github", Dir: "/r/x", Scope: "repo", Tool: "merge_pr"})
	var d *rights.Denial
	if !errors.As(err, &d) || d.Part != rights.PartTool || !strings.Contains(d.Msg, `"merge_pr"`) || strings.Contains(d.Msg+d.Hint, "get_") {
		t.Errorf("Check of a hidden tool = %#v, want a tool denial naming the tool, not the patterns", err)
	}
	err = toolGrant.Check(rights.Use{Server: "github", Dir: "/r/x", Scope: "global", Tool: "merge_pr"})
	if !errors.As(err, &d) || d.Part != rights.PartTool {
		t.Errorf("Check with an allowed scope and a hidden tool = %#v, want a tool denial", err)
	}
}

// TestToolSet: a listing's filter is the whole-rule check of each tool.
func TestToolSet(t *testing.T) {
	at := rights.Use{Server: "github", Dir: "/r/x", Scope: "repo"}
	set := toolGrant.Tools(at)
	if set.All() || !set.Any() {
		t.Errorf("Tools(%+v): all %v, any %v; want patterns that may match", at, set.All(), set.Any())
	}
	for _, tool := range []string{"get_issue", "merge_pr", "read_file", "get_"} {
		u := at
		u.Tool = tool
		if set.Allows(tool) != toolGrant.Allows(u) {
			t.Errorf("ToolSet.Allows(%q) = %v, Allows(%+v) = %v", tool, set.Allows(tool), u, !set.Allows(tool))
		}
	}
	if s := toolGrant.Tools(rights.Use{Server: "fs", Dir: "/r"}); !s.All() {
		t.Errorf("fs without a tool limit: All() false")
	}
	if s := toolGrant.Tools(rights.Use{Server: "vault"}); s.Any() || s.Allows("get") {
		t.Errorf("tools []: Any %v, want false", s.Any())
	}
	if s := (rights.Rights{{Tools: []string{"fs.read_*", "gitlab*"}}}).Tools(rights.Use{Server: "github"}); s.Any() {
		t.Errorf("patterns for other servers: Any() true for github")
	}
	for _, p := range []string{"*", "git*", "github*", "github.x", "*.get"} {
		if s := (rights.Rights{{Tools: []string{p}}}).Tools(rights.Use{Server: "github"}); !s.Any() {
			t.Errorf("pattern %q: Any() false for github", p)
		}
	}
	if s := (rights.Rights{{Tools: []string{"github."}}}).Tools(rights.Use{Server: "github"}); s.Any() {
		t.Errorf(`pattern "github.": Any() true, but it names no tool`)
	}
	if s := rights.None().Tools(rights.Use{Server: "github"}); s.All() || s.Any() {
		t.Errorf("no rights: a tool set that may hold tools")
	}
}

// TestToolsJSON: tools survive a round trip, absent stays every tool and
// [] none; a grant element without tools grants every tool of its servers.
func TestToolsJSON(t *testing.T) {
	for _, want := range []string{
		`[{"servers":["github"],"tools":["github.get_*"]}]`,
		`[{"servers":["github"],"tools":[]}]`,
		`[{"servers":["github"]}]`,
	} {
		var r rights.Rights
		if err := json.Unmarshal([]byte(want), &r); err != nil {
			t.Fatal(err)
		}
		if got := r.String(); got != want {
			t.Errorf("round trip of %s = %s", want, got)
		}
	}
	var e rights.Rule
	if err := json.Unmarshal([]byte(`{"servers": ["github"]}`), &e); err != nil {
		t.Fatal(err)
	}
	if !(rights.Rights{e.Granted()}).Allows(rights.Use{Server: "github", Tool: "anything"}) {
		t.Errorf("a grant element without tools does not allow every tool")
	}
}

// TestCoversTools: a token's tool patterns must lie provably within its
// minter's, at each use; a minter with patterns names the tools of each
// token it mints.
func TestCoversTools(t *testing.T) {
	minter := rights.Rights{
		{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{"github.get_*", "github.list_issues"}},
		{Servers: []string{"github"}, Roots: []string{"/r/admin"}, Tools: []string{"github.*"}},
		{Servers: []string{"fs"}, Roots: []string{"/r"}},
		{Servers: []string{"*"}, Roots: []string{"/w"}, Tools: []string{"*"}},
	}
	for _, tc := range []struct {
		name  string
		q     rights.Rule
		value string // "" = covered
	}{
		{"the same pattern", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{"github.get_*"}}, ""},
		{"a narrower prefix", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r/x"}, Tools: []string{"github.get_issue*"}}, ""},
		{"a tool name", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{"github.get_issue", "github.list_issues"}}, ""},
		{"no tools", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{}}, ""},
		{"another tool", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{"github.merge_pr"}}, "github.merge_pr"},
		{"a wider pattern", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{"github.*"}}, "github.*"},
		{"a glob whose literal start is within a prefix", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{"github.get_*_x*"}}, ""},
		{"a suffix glob is not provable", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{"github.*_issue"}}, "github.*_issue"},
		{"every tool from a minter with patterns", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r"}}, "(all)"},
		{"every tool from a minter without", rights.Rule{Servers: []string{"fs"}, Roots: []string{"/r/x"}}, ""},
		{"the wider rule in its root", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r/admin"}, Tools: []string{"github.merge_pr", "*"}}, ""},
		{"the wider rule's pattern beyond its root", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r", "/r/admin"}, Tools: []string{"github.merge_pr"}}, "github.merge_pr"},
		{"patterns for another server are skipped", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{"fs.write_*", "github.get_x"}}, ""},
		{"a pattern for fs within fs's unlimited rule", rights.Rule{Servers: []string{"fs", "github"}, Roots: []string{"/r"}, Tools: []string{"fs.*", "github.get_*"}}, ""},
		{"* is every tool of github", rights.Rule{Servers: []string{"github"}, Roots: []string{"/r"}, Tools: []string{"*"}}, "*"},
		{"every server's tools under *", rights.Rule{Roots: []string{"/w"}, Tools: []string{"x.y", "*"}}, ""},
		{"every server, every tool, from *", rights.Rule{Roots: []string{"/w"}}, "(all)"},
	} {
		err := minter.Covers(tc.q)
		if tc.value == "" {
			if err != nil {
				t.Errorf("%s: %v, want covered", tc.name, err)
			}
			continue
		}
		var ex *rights.Excess
		if !errors.As(err, &ex) || ex.Field != "tools" || ex.Value != tc.value {
			t.Errorf("%s: %v, want an excess of tools %s", tc.name, err, tc.value)
		}
	}
	if err := rights.All().Covers(rights.Rule{Tools: []string{"*"}}); err != nil {
		t.Errorf("All does not cover tools: %v", err)
	}
}
