package broker_test

import (
	"errors"
	"strings"
	"testing"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/broker/config"
)

// TestScopeRights: a caller's Scopes bound the scope kinds its calls may
// use; a refusal names the scope and the allowed ones, and nil means all.
func TestScopeRights(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"glob": config.ScopeGlobal, "sess": config.ScopeSession})
	for _, tc := range []struct {
		scopes  []config.ScopeKind
		server  string
		allowed bool
		detail  string // in the refusal
	}{
		{nil, "glob", true, ""},
		{nil, "sess", true, ""},
		{[]config.ScopeKind{"*"}, "sess", true, ""},
		{[]config.ScopeKind{config.ScopeSession}, "sess", true, ""},
		{[]config.ScopeKind{config.ScopeSession}, "glob", false, `scope "global"; this caller may use scopes: session`},
		{[]config.ScopeKind{config.ScopeRepo, config.ScopeCwd}, "sess", false, "may use scopes: repo, cwd"},
		{[]config.ScopeKind{}, "glob", false, "may use scopes: none"},
	} {
		r := req(tc.server, "")
		r.Context.Session = "s1"
		r.Caller = broker.Caller{Name: "alice", Via: "jwt", Scopes: tc.scopes}
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

func TestParseScopes(t *testing.T) {
	if got, err := broker.ParseScopes(nil); got != nil || err != nil {
		t.Errorf("ParseScopes(nil) = %v, %v; want nil (every scope)", got, err)
	}
	got, err := broker.ParseScopes([]string{"session", "repo", "session"})
	if err != nil || len(got) != 2 || got[0] != "repo" || got[1] != "session" {
		t.Errorf("ParseScopes = %v, %v; want [repo session]", got, err)
	}
	if got, err := broker.ParseScopes([]string{}); got == nil || len(got) != 0 || err != nil {
		t.Errorf("ParseScopes([]) = %#v, %v; want empty non-nil (no scope)", got, err)
	}
	if _, err := broker.ParseScopes([]string{"repos"}); err == nil || !strings.Contains(err.Error(), `"repos"`) {
		t.Errorf("ParseScopes(repos) = %v, want an error naming it", err)
	}
}
