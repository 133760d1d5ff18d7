package broker_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

func toolNamesOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var tools []struct{ Name string }
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatalf("tools %s: %v", raw, err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// TestToolPatterns: a caller whose rules have tool patterns sees only the
// tools one rule allows with the server, the cwd and the scope, and a
// call to another is refused exactly as a tool the child does not list,
// its suggestion drawn from the visible tools only.
func TestToolPatterns(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeCwd})
	top, _ := filepath.EvalSymlinks(t.TempDir())
	dir, admin := filepath.Join(top, "work"), filepath.Join(top, "admin")
	for _, d := range []string{dir, admin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := broker.Caller{Name: "ci", Via: "jwt", Rights: rights.Rights{
		{Servers: []string{"demo"}, Roots: []string{top}, Tools: []string{"demo.e*", "other.pid"}},
		{Servers: []string{"demo"}, Roots: []string{admin}, Tools: []string{"demo.pid"}},
	}}
	at := func(cwd string) broker.Request {
		return broker.Request{Caller: c, Server: "demo", Context: broker.CallContext{Cwd: cwd}}
	}

	for cwd, want := range map[string][]string{dir: {"echo", "env"}, admin: {"echo", "env", "pid"}} {
		l, err := b.ToolList(t.Context(), at(cwd))
		if err != nil {
			t.Fatal(err)
		}
		if got := toolNamesOf(t, l.Tools); !slices.Equal(got, want) {
			t.Errorf("ToolList at %s = %v, want %v", cwd, got, want)
		}
		raw, err := b.Tools(t.Context(), at(cwd))
		if err != nil || !slices.Equal(toolNamesOf(t, raw), want) {
			t.Errorf("Tools at %s = %s, %v; want %v", cwd, raw, err, want)
		}
	}
	owner, err := b.Tools(t.Context(), req("demo", dir))
	if err != nil || len(toolNamesOf(t, owner)) < 10 {
		t.Fatalf("the owner's listing: %s, %v; want every demo tool", owner, err)
	}

	if got := callText(t, b, at(dir), "echo", `{"message":"hi"}`); got != "hi" {
		t.Errorf("an allowed tool: %q", got)
	}
	if got := callText(t, b, at(admin), "pid", `{}`); got == "" {
		t.Errorf("pid in the rule that allows it: empty")
	}

	// pid is the other rule's, in its root only: at dir, no such tool.
	_, hidden := b.CallTool(t.Context(), at(dir), "pid", json.RawMessage(`{}`), nil)
	_, missing := b.CallTool(t.Context(), at(dir), "pidx", json.RawMessage(`{}`), nil)
	var he, me *broker.Error
	if !errors.As(hidden, &he) || !errors.As(missing, &me) {
		t.Fatalf("hidden %v, missing %v: want *broker.Error", hidden, missing)
	}
	if he.Kind != broker.KindNotFound || he.Msg != `no tool "pid"` || he.Hint != me.Hint || me.Kind != he.Kind ||
		strings.ReplaceAll(me.Msg, "pidx", "pid") != he.Msg || he.Server != me.Server {
		t.Errorf("a hidden tool: %+v; one that does not exist: %+v; want the same not found", he, me)
	}
	if !broker.IsRefusal(hidden) || broker.IsRefusal(missing) {
		t.Errorf("IsRefusal: hidden %v, missing %v; want a refusal to the owner's metrics for the hidden one only", broker.IsRefusal(hidden), broker.IsRefusal(missing))
	}
	if _, err := b.CallTool(t.Context(), req("demo", dir), "pi", nil, nil); err == nil || !strings.Contains(err.(*broker.Error).Hint, `"pid"`) {
		t.Fatalf("the owner's suggestion for pi: %v, want pid", err)
	}
	for tool, want := range map[string]string{"pi": "", "ech": `did you mean "echo"?`} {
		_, err := b.CallTool(t.Context(), at(dir), tool, nil, nil)
		var be *broker.Error
		if !errors.As(err, &be) || be.Kind != broker.KindNotFound || strings.Contains(be.Hint, "pid") || !strings.Contains(be.Hint, want) {
			t.Errorf("call %s: %v (%s), want not found suggesting %q and never pid", tool, err, be.Hint, want)
		}
	}

	// A rule with tools [] lets the caller use the server, and no tool.
	none := broker.Request{Caller: broker.Caller{Name: "n", Via: "jwt", Rights: rights.Rights{{Servers: []string{"demo"}, Tools: []string{}}}},
		Server: "demo", Context: broker.CallContext{Cwd: dir}}
	if raw, err := b.Tools(t.Context(), none); err != nil || string(raw) != "[]" {
		t.Errorf("tools []: listing %s, %v; want []", raw, err)
	}
	if _, err := b.ServerAt(none); err != nil {
		t.Errorf("tools []: the server itself: %v", err)
	}
	if _, err := b.CallTool(t.Context(), none, "echo", nil, nil); broker.KindOf(err) != broker.KindNotFound {
		t.Errorf("tools []: call echo = %v, want not found", err)
	}
}

// TestToolPatternsBoundTheRoot: the instance root of a call must be
// allowed with its tool: a rule that reaches the repository root but not
// the tool does not root the tool's child there.
func TestToolPatternsBoundTheRoot(t *testing.T) {
	dir := t.TempDir()
	wts := testenv.Worktrees(t, filepath.Join(dir, "home"), map[string]string{"proj/f": "x"})
	proj := filepath.Join(wts[0], "proj")
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeWorktree})
	r := req("demo", proj)
	r.Caller = broker.Caller{Name: "remote", Via: "tailnet", Rights: rights.Rights{
		{Servers: []string{"demo"}, Roots: []string{wts[0]}, Tools: []string{"demo.echo"}},
		{Servers: []string{"demo"}, Roots: []string{proj}, Tools: []string{"demo.cwd"}},
	}}
	if got := callText(t, b, r, "cwd", `{}`); got != proj {
		t.Errorf("cwd = %q, want %s: the rule that allows cwd does not reach the worktree's root", got, proj)
	}
	if got := callText(t, b, r, "echo", `{"message":"x"}`); got != "x" {
		t.Errorf("echo = %q", got)
	}
	keys := []string{}
	for _, in := range b.Instances() {
		keys = append(keys, in.Key)
	}
	slices.Sort(keys)
	if len(keys) != 2 || keys[0] != "cwd:"+proj {
		t.Errorf("instances %v, want cwd:%s (the cwd tool's) and the worktree's (echo's)", keys, proj)
	}
}

// TestCheckRightsTools: tool patterns read from a grant or a token are
// checked; a bad one is a bad request naming it.
func TestCheckRightsTools(t *testing.T) {
	if err := broker.CheckRights(rights.Rights{{Tools: []string{"demo.*", "*"}}}); err != nil {
		t.Errorf("good patterns: %v", err)
	}
	// A tailnet grant element, as tsnet reads it (tailcfg.UnmarshalCapJSON
	// is json.Unmarshal of each element, then Granted and CheckRights).
	var e rights.Rule
	if err := json.Unmarshal([]byte(`{"servers": ["demo"], "tools": ["demo.get_*", "demo.x?"]}`), &e); err != nil {
		t.Fatal(err)
	}
	err := broker.CheckRights(rights.Rights{e.Granted()})
	var be *broker.Error
	if !errors.As(err, &be) || be.Kind != broker.KindBadRequest || be.Field != "tools" || !strings.Contains(be.Msg, `"demo.x?"`) {
		t.Errorf("CheckRights(demo.x?) = %v, want a bad request naming it", err)
	}
}
