package broker_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
)

// TestScopeRights: a caller's scopes bound the scope kinds its calls may
// use; a refusal names the scope and the allowed ones, and nil means all.
func TestScopeRights(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"glob": config.ScopeGlobal, "sess": config.ScopeSession})
	for _, tc := range []struct {
		scopes  []string
		server  string
		allowed bool
		detail  string // in the refusal
	}{
		{nil, "glob", true, ""},
		{nil, "sess", true, ""},
		{[]string{"*"}, "sess", true, ""},
		{[]string{"session"}, "sess", true, ""},
		{[]string{"session"}, "glob", false, `scope "global"; this caller may use scopes: session`},
		{[]string{"repo", "cwd"}, "sess", false, "may use scopes: repo, cwd"},
		{[]string{}, "glob", false, "may use scopes: none"},
	} {
		r := req(tc.server, "")
		r.Context.Session = "s1"
		r.Caller = broker.Caller{Name: "alice", Via: "jwt", Rights: rights.Rights{{Scopes: tc.scopes}}}
		_, err := b.Target(r)
		if tc.allowed {
			if err != nil {
				t.Errorf("scopes %v, server %s: %v, want allowed", tc.scopes, tc.server, err)
			}
			continue
		}
		var be *broker.Error
		if !errors.As(err, &be) || be.Kind != broker.KindForbidden || !strings.Contains(be.Msg, tc.detail) {
			t.Errorf("scopes %v, server %s: err %v, want forbidden saying %q", tc.scopes, tc.server, err, tc.detail)
		}
	}
}

// TestRulesCheckedWhole is the real-use reproduction through the broker:
// with two grant elements, a call is allowed only when one element allows
// its server, its cwd and its scope together. Merged field by field, both
// roots and no scope limit applied to both servers.
func TestRulesCheckedWhole(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeCwd, "hiddenvault": config.ScopeCwd},
		func(s *config.Server) { s.ScopePolicy = config.ScopePolicy{AllowOverride: true} })
	top, _ := filepath.EvalSymlinks(t.TempDir())
	granted, other := filepath.Join(top, "granted"), filepath.Join(top, "other")
	for _, d := range []string{granted, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := broker.Caller{Name: "laptop", Via: "tailnet", Rights: rights.Rights{
		{Servers: []string{"demo"}, Roots: []string{granted}, Scopes: []string{"cwd", "worktree"}},
		{Servers: []string{"hiddenvault"}, Roots: []string{other}},
	}}
	for _, tc := range []struct {
		name   string
		server string
		cwd    string
		scope  config.ScopeKind // Mcpx-Scope
		kind   broker.Kind      // "" = allowed
		field  string
	}{
		{"demo in its root", "demo", granted, "", "", ""},
		{"hiddenvault in its root, any scope", "hiddenvault", other, config.ScopeGlobal, "", ""},
		{"demo from the other element's root", "demo", other, "", broker.KindForbidden, "Mcpx-Cwd"},
		{"demo with the scope the other element does not limit", "demo", granted, config.ScopeGlobal, broker.KindForbidden, "scope"},
		{"hiddenvault from the first element's root", "hiddenvault", granted, "", broker.KindForbidden, "Mcpx-Cwd"},
	} {
		r := broker.Request{Caller: c, Server: tc.server, Context: broker.CallContext{Cwd: tc.cwd, Scope: tc.scope}}
		_, err := b.Target(r)
		var be *broker.Error
		switch {
		case tc.kind == "" && err != nil:
			t.Errorf("%s: %v, want allowed", tc.name, err)
		case tc.kind == "":
		case !errors.As(err, &be) || be.Kind != tc.kind || be.Field != tc.field:
			t.Errorf("%s: %v, want %s on %s", tc.name, err, tc.kind, tc.field)
		case tc.server == "demo" && strings.Contains(be.Error()+be.Hint, "hiddenvault"):
			t.Errorf("%s: the refusal names another server: %v (%s)", tc.name, err, be.Hint)
		}
	}
}

// TestCheckRights: the scopes of rights read from a grant or a token are
// scope kinds the broker knows, or "*".
func TestCheckRights(t *testing.T) {
	if err := broker.CheckRights(rights.Rights{{Scopes: []string{"session", "repo", "*"}}, {}}); err != nil {
		t.Errorf("known scopes: %v", err)
	}
	err := broker.CheckRights(rights.Rights{{Scopes: []string{"repos"}}})
	if broker.KindOf(err) != broker.KindBadRequest || !strings.Contains(err.Error(), `"repos"`) {
		t.Errorf("CheckRights(repos) = %v, want a bad request naming it", err)
	}
}
