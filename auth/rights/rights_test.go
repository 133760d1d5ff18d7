package rights_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
)

// grant is the reproduction of the real-use issue: two grant elements, each
// narrower than their field-by-field merge.
var grant = rights.Rights{
	{Servers: []string{"demo"}, Roots: []string{"/r/granted"}, Scopes: []string{"cwd", "worktree"}},
	{Servers: []string{"hiddenvault"}, Roots: []string{"/r/other"}},
}

// TestAllowsWholeRules: a use is allowed when one rule allows its server,
// its directory and its scope together, never by pieces of two rules.
func TestAllowsWholeRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    rights.Rights
		u    rights.Use
		want bool
	}{
		{"first rule whole", grant, rights.Use{Server: "demo", Dir: "/r/granted/src", Scope: "cwd"}, true},
		{"second rule whole, any scope", grant, rights.Use{Server: "hiddenvault", Dir: "/r/other", Scope: "global"}, true},
		{"demo from the other rule's root", grant, rights.Use{Server: "demo", Dir: "/r/other", Scope: "cwd"}, false},
		{"demo with the other rule's scope limit lifted", grant, rights.Use{Server: "demo", Dir: "/r/granted", Scope: "global"}, false},
		{"hiddenvault from the first rule's root", grant, rights.Use{Server: "hiddenvault", Dir: "/r/granted", Scope: "cwd"}, false},
		{"a server no rule names", grant, rights.Use{Server: "other"}, false},
		{"a prefix is not a parent", grant, rights.Use{Server: "demo", Dir: "/r/grantedx", Scope: "cwd"}, false},
		{"no declared cwd", grant, rights.Use{Server: "demo", Scope: "worktree"}, true},
		{"server only: may use it at all", grant, rights.Use{Server: "hiddenvault"}, true},
		{"dir only", grant, rights.Use{Dir: "/r/other/x"}, true},
		{"dir outside every rule", grant, rights.Use{Dir: "/etc"}, false},

		{"zero rights", nil, rights.Use{Server: "demo"}, false},
		{"no rule", rights.None(), rights.Use{Dir: "/"}, false},
		{"all", rights.All(), rights.Use{Server: "x", Dir: "/etc", Scope: "global"}, true},
		{"servers [] is none", rights.Rights{{Servers: []string{}}}, rights.Use{Server: "demo"}, false},
		{"servers * is every", rights.Rights{{Servers: []string{"*"}}}, rights.Use{Server: "demo", Dir: "/x", Scope: "repo"}, true},
		{"roots [] is no declared cwd", rights.Rights{{Roots: []string{}}}, rights.Use{Server: "demo", Dir: "/x"}, false},
		{"roots [] allows none declared", rights.Rights{{Roots: []string{}}}, rights.Use{Server: "demo"}, true},
		{"root / is anywhere", rights.Rights{{Roots: []string{"/"}}}, rights.Use{Dir: "/etc/x"}, true},
		{"root with a trailing slash", rights.Rights{{Roots: []string{"/r/"}}}, rights.Use{Dir: "/r/x"}, true},
		{"scopes [] is none", rights.Rights{{Scopes: []string{}}}, rights.Use{Server: "demo", Scope: "global"}, false},
		{"scopes * is every", rights.Rights{{Scopes: []string{"*"}}}, rights.Use{Scope: "pid"}, true},
	} {
		if got := tc.r.Allows(tc.u); got != tc.want {
			t.Errorf("%s: Allows(%+v) = %v, want %v", tc.name, tc.u, got, tc.want)
		}
	}
}

// TestCheck: a refusal names the first part no rule allows with the parts
// before it, and only what the rules naming that server allow.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		u      rights.Use
		part   rights.Part
		detail string // in Msg or Hint
	}{
		{rights.Use{Server: "other", Dir: "/r/granted", Scope: "cwd"}, rights.PartServer, `may not use server "other"`},
		{rights.Use{Server: "demo", Dir: "/r/other", Scope: "cwd"}, rights.PartDir, "may use demo under /r/granted"},
		{rights.Use{Server: "demo", Dir: "/r/granted", Scope: "global"}, rights.PartScope, `scope "global"; this caller may use scopes: cwd, worktree`},
		{rights.Use{Server: "hiddenvault", Dir: "/r/granted", Scope: "cwd"}, rights.PartDir, "may use hiddenvault under /r/other"},
	} {
		err := grant.Check(tc.u)
		var d *rights.Denial
		if !errors.As(err, &d) || d.Part != tc.part || !strings.Contains(d.Msg+" "+d.Hint, tc.detail) {
			t.Errorf("Check(%+v) = %#v, want a denial of the %s saying %q", tc.u, err, tc.part, tc.detail)
			continue
		}
		if strings.Contains(d.Msg+d.Hint, "hiddenvault") && tc.u.Server != "hiddenvault" {
			t.Errorf("Check(%+v) names another server: %q %q", tc.u, d.Msg, d.Hint)
		}
	}
	if err := grant.Check(rights.Use{Server: "demo", Dir: "/r/granted", Scope: "cwd"}); err != nil {
		t.Errorf("an allowed use: %v", err)
	}
	noCwd := rights.Rights{{Servers: []string{"demo"}, Roots: []string{}}}
	if err := noCwd.Check(rights.Use{Server: "demo", Dir: "/x"}); err == nil || !strings.Contains(err.(*rights.Denial).Hint, "only without a declared cwd") {
		t.Errorf("roots []: %v, want a hint that only calls without a cwd are allowed", err)
	}
	none := rights.Rights{{Servers: []string{"demo"}, Scopes: []string{}}}
	if err := none.Check(rights.Use{Server: "demo", Scope: "cwd"}); err == nil || !strings.Contains(err.Error(), "may use scopes: none") {
		t.Errorf("scopes []: %v, want one naming no scope", err)
	}
}

// TestAdminAndProjectConfig: admin is the caller's if any rule says so;
// project config is a rule's, in its roots only.
func TestAdminAndProjectConfig(t *testing.T) {
	r := rights.Rights{
		{Servers: []string{"demo"}, Roots: []string{"/p"}, ProjectConfig: true},
		{Servers: []string{"*"}, Roots: []string{"/q"}, Admin: true},
	}
	if !r.Admin() || grant.Admin() {
		t.Errorf("Admin: %v and %v, want true for a rule saying admin, false for none", r.Admin(), grant.Admin())
	}
	for dir, want := range map[string]bool{"/p": true, "/p/sub": true, "/q": false, "/": false, "": true} {
		if got := r.ProjectConfig(dir); got != want {
			t.Errorf("ProjectConfig(%q) = %v, want %v", dir, got, want)
		}
	}
	if grant.ProjectConfig("") || !rights.All().ProjectConfig("/anything") {
		t.Errorf("ProjectConfig: no rule saying it grants it, or All does not")
	}
}

// TestMetrics: the metrics right is a rule's metrics or admin, denied by
// default, and it makes no admin.
func TestMetrics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      rights.Rights
		want   bool
		admin  bool
		server bool // may use server demo
	}{
		{"none", rights.None(), false, false, false},
		{"a plain grant", grant, false, false, true},
		{"metrics alone", rights.Rights{{Servers: []string{}, Roots: []string{}, Metrics: true}}, true, false, false},
		{"metrics in one rule of two", append(rights.Rights{{Servers: []string{}, Metrics: true}}, grant...), true, false, true},
		{"admin", rights.Rights{{Servers: []string{}, Admin: true}}, true, true, false},
		{"all", rights.All(), true, true, true},
	} {
		if got := tc.r.Metrics(); got != tc.want {
			t.Errorf("%s: Metrics() = %v, want %v", tc.name, got, tc.want)
		}
		if got := tc.r.Admin(); got != tc.admin {
			t.Errorf("%s: Admin() = %v, want %v", tc.name, got, tc.admin)
		}
		if got := tc.r.MayUse("demo"); got != tc.server {
			t.Errorf("%s: MayUse(demo) = %v, want %v", tc.name, got, tc.server)
		}
	}
	var r rights.Rights
	if err := json.Unmarshal([]byte(`[{"servers": [], "metrics": true}]`), &r); err != nil || !r.Metrics() || r.String() != `[{"servers":[],"metrics":true}]` {
		t.Errorf("metrics in JSON: %v, %s", err, r)
	}
}

// TestJSON: one form, in which an empty list ("none") and an absent one
// ("no limit") survive a round trip.
func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		r    rights.Rights
		want string
	}{
		{grant, `[{"servers":["demo"],"roots":["/r/granted"],"scopes":["cwd","worktree"]},{"servers":["hiddenvault"],"roots":["/r/other"]}]`},
		{rights.All(), `[{"admin":true,"projectConfig":true,"code":true}]`},
		{rights.None(), `[]`},
		{rights.Rights{{Servers: []string{}, Roots: []string{}, Scopes: []string{}}}, `[{"servers":[],"roots":[],"scopes":[]}]`},
	} {
		b, err := json.Marshal(tc.r)
		if err != nil || string(b) != tc.want || tc.r.String() != tc.want {
			t.Errorf("Marshal(%#v) = %s, %v; want %s", tc.r, b, err, tc.want)
			continue
		}
		var back rights.Rights
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if b2, _ := json.Marshal(back); string(b2) != tc.want {
			t.Errorf("round trip of %s = %s", tc.want, b2)
		}
		for _, u := range []rights.Use{{Server: "demo"}, {Server: "x", Dir: "/y", Scope: "global"}, {Dir: "/r/other"}} {
			if back.Allows(u) != tc.r.Allows(u) {
				t.Errorf("after a round trip of %s, Allows(%+v) changed", tc.want, u)
			}
		}
	}
}

// TestGranted: a grant element or token request grants nothing by
// omission, except scopes (which only narrow).
func TestGranted(t *testing.T) {
	var e rights.Rule
	if err := json.Unmarshal([]byte(`{"admin": true}`), &e); err != nil {
		t.Fatal(err)
	}
	g := rights.Rights{e.Granted()}
	if g.MayUse("demo") || g.Allows(rights.Use{Dir: "/x"}) || !g.Admin() {
		t.Errorf("granted %+v: may use a server or a cwd, or is not admin", g)
	}
	e = rights.Rule{Servers: []string{"demo"}}.Granted()
	if !(rights.Rights{e}).Allows(rights.Use{Server: "demo", Scope: "repo"}) {
		t.Errorf("absent scopes in a grant: %+v does not allow every scope", e)
	}
}

func TestCanonical(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	canon, _ := filepath.EvalSymlinks(real)
	r := rights.Rights{
		{Roots: []string{link + "/", real, "relative", filepath.Join(dir, "missing")}},
		{Roots: []string{"relative"}},
		{},
	}
	got := r.Canonical()
	if len(got) != 3 || strings.Join(got[0].Roots, ",") != canon {
		t.Fatalf("Canonical = %#v, want the first rule's roots [%s]", got, canon)
	}
	if got[1].Roots == nil || len(got[1].Roots) != 0 {
		t.Errorf("a rule whose roots are all dropped has roots %#v, want [] (no declared cwd), never nil (anywhere)", got[1].Roots)
	}
	if got[2].Roots != nil {
		t.Errorf("a rule without a roots limit got %#v", got[2].Roots)
	}
	if len(r[0].Roots) != 4 {
		t.Errorf("Canonical modified its receiver")
	}
}

func TestCheckScopes(t *testing.T) {
	kinds := []string{"global", "repo", "session"}
	if err := (rights.Rights{{Scopes: []string{"repo", "*"}}, {}}).CheckScopes(kinds); err != nil {
		t.Errorf("known scopes: %v", err)
	}
	if err := (rights.Rights{{}, {Scopes: []string{"repos"}}}).CheckScopes(kinds); err == nil || !strings.Contains(err.Error(), `unknown scope "repos"`) {
		t.Errorf("an unknown scope: %v, want an error naming it", err)
	}
}

// TestCovers: a token may grant only rights its minter has, each use in
// one of the minter's rules.
func TestCovers(t *testing.T) {
	minter := append(rights.Rights{{Servers: []string{"tools"}, Roots: []string{"/p"}, ProjectConfig: true}}, grant...)
	for _, tc := range []struct {
		name  string
		q     rights.Rule
		field string // "" = covered
		value string
	}{
		{"inside one rule", rights.Rule{Servers: []string{"demo"}, Roots: []string{"/r/granted/x"}, Scopes: []string{"cwd"}}, "", ""},
		{"each server in its own rule, no cwd", rights.Rule{Servers: []string{"demo", "hiddenvault"}, Roots: []string{}, Scopes: []string{"cwd"}}, "", ""},
		{"a server no rule names", rights.Rule{Servers: []string{"other"}, Roots: []string{}}, "servers", "other"},
		{"every server", rights.Rule{Roots: []string{}}, "servers", "*"},
		{"two rules' servers at one root", rights.Rule{Servers: []string{"demo", "hiddenvault"}, Roots: []string{"/r/granted"}, Scopes: []string{"cwd"}}, "roots", "/r/granted"},
		{"anywhere", rights.Rule{Servers: []string{"demo"}, Scopes: []string{"cwd"}}, "roots", "/"},
		{"every scope", rights.Rule{Servers: []string{"demo"}, Roots: []string{"/r/granted"}}, "scopes", "(all)"},
		{"another scope", rights.Rule{Servers: []string{"demo"}, Roots: []string{}, Scopes: []string{"global"}}, "scopes", "global"},
		{"any scope of the unlimited rule", rights.Rule{Servers: []string{"hiddenvault"}, Roots: []string{"/r/other"}}, "", ""},
		{"project config in its rule's roots", rights.Rule{Servers: []string{"tools"}, Roots: []string{"/p/x"}, ProjectConfig: true}, "", ""},
		{"project config elsewhere", rights.Rule{Servers: []string{"demo"}, Roots: []string{"/r/granted"}, Scopes: []string{"cwd"}, ProjectConfig: true}, "projectConfig", "true"},
		{"nothing", rights.Rule{Servers: []string{}, Roots: []string{}, Scopes: []string{}}, "", ""},
		{"metrics without them", rights.Rule{Servers: []string{}, Roots: []string{}, Metrics: true}, "metrics", "true"},
		{"code without it", rights.Rule{Servers: []string{}, Roots: []string{}, Code: true}, "code", "true"},
		{"a mode, which grants nothing", rights.Rule{Servers: []string{}, Roots: []string{}, MCPMode: "code"}, "", ""},
	} {
		err := minter.Covers(tc.q)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v, want covered", tc.name, err)
			}
			continue
		}
		var ex *rights.Excess
		if !errors.As(err, &ex) || ex.Field != tc.field || ex.Value != tc.value {
			t.Errorf("%s: %v, want an excess of %s %s", tc.name, err, tc.field, tc.value)
		}
	}
	if err := rights.All().Covers(rights.Rule{ProjectConfig: true, Admin: true, Metrics: true, Code: true}); err != nil {
		t.Errorf("All does not cover everything: %v", err)
	}
}

// TestMCPMode: the first rule naming a mode gives it; an unknown one is an
// error naming it; the code right is any rule's.
func TestMCPMode(t *testing.T) {
	r := rights.Rights{{Servers: []string{"a"}}, {MCPMode: "code", Code: true}, {MCPMode: "tools"}}
	if r.MCPMode() != "code" || !r.Code() || (rights.Rights{{MCPMode: "both"}}).Code() {
		t.Errorf("MCPMode %q, Code %v", r.MCPMode(), r.Code())
	}
	if err := (rights.Rights{{MCPMode: "codes"}}).CheckMCPModes(); err == nil || !strings.Contains(err.Error(), `"codes"`) {
		t.Errorf("an unknown mode: %v", err)
	}
}
