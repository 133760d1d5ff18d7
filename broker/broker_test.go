package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.MaybeExec() // in a confined child's helper: confine, exec, never return
	demo.MaybeServe()
	maybeFlood()
	maybeSlowRoots()
	os.Exit(m.Run())
}

// demoSetup describes a broker serving the demo server (this test binary,
// re-exec'd) under each name in scopes with that scope.
type demoSetup struct {
	scopes map[string]config.ScopeKind
	server func(*config.Server) // edits each server after parsing; nil = none
	config func(*config.Config) // edits the whole config; nil = none
	opts   broker.Options       // Config is filled in; ReapInterval 0 = no reaper
}

// startDemoBroker starts the broker of s, closed at cleanup, and checks that
// no child outlives the test.
func startDemoBroker(tb testing.TB, s demoSetup) *broker.Broker {
	tb.Helper()
	proctest.CheckNoLeaks(tb)
	servers := map[string]any{}
	for name, scope := range s.scopes {
		servers[name] = map[string]any{
			"command": os.Args[0],
			"env":     map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(tb)},
			"scope":   scope,
		}
	}
	data, _ := json.Marshal(map[string]any{"servers": servers})
	cfg, err := config.Parse(data, "test.json")
	if err != nil {
		tb.Fatal(err)
	}
	for _, sc := range cfg.Servers {
		if s.server != nil {
			s.server(sc)
		}
	}
	if s.config != nil {
		s.config(cfg)
	}
	opts := s.opts
	opts.Config = cfg
	if opts.ReapInterval == 0 {
		opts.ReapInterval = -1
	}
	b, err := broker.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		b.Close(ctx)
	})
	return b
}

// newDemoBroker is startDemoBroker with only scopes and a server edit.
func newDemoBroker(tb testing.TB, scopes map[string]config.ScopeKind, edit ...func(*config.Server)) *broker.Broker {
	tb.Helper()
	s := demoSetup{scopes: scopes}
	if len(edit) > 0 {
		s.server = edit[0]
	}
	return startDemoBroker(tb, s)
}

var local = broker.Caller{Name: "local:test", Via: "unix", Local: true, Owner: true, Rights: rights.All()}

func req(server, cwd string) broker.Request {
	return broker.Request{Caller: local, Server: server, Context: broker.CallContext{Cwd: cwd}}
}

func text(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("result %s: %v", res, err)
	}
	return r.Content[0].Text
}

func callText(t *testing.T, b *broker.Broker, r broker.Request, tool string, args string) string {
	t.Helper()
	res, err := b.CallTool(t.Context(), r, tool, json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("%s.%s from %q: %v", r.Server, tool, r.Context.Cwd, err)
	}
	return text(t, res)
}

func TestTwoWorktreesGetTwoInstancesWithTheirOwnRoot(t *testing.T) {
	dir := t.TempDir()
	wts := testenv.Worktrees(t, filepath.Join(dir, "app"), map[string]string{"README": "hi\n", "pkg/a/a.txt": "a\n"}, "app-feature")
	main, linked := wts[0], wts[1]
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeWorktree, "g": config.ScopeGlobal, "repo": config.ScopeRepo})

	for _, wt := range wts {
		// A cwd deep in the tree still lands on the worktree's instance.
		deep := filepath.Join(wt, "pkg", "a")
		if got := callText(t, b, req("demo", deep), "cwd", `{}`); got != wt {
			t.Errorf("cwd tool from %s = %q, want the worktree %q", deep, got, wt)
		}
		var roots []struct{ URI, Name string }
		json.Unmarshal([]byte(callText(t, b, req("demo", wt), "roots", `{}`)), &roots)
		if len(roots) != 1 || roots[0].URI != "file://"+wt {
			t.Errorf("roots from %s = %+v, want [file://%s]", wt, roots, wt)
		}
	}
	var keys []string
	for _, in := range b.Instances() {
		if in.Server == "demo" {
			keys = append(keys, in.Key)
			if in.Root != strings.TrimPrefix(in.Key, "worktree:") || in.CwdSource != "scope" {
				t.Errorf("instance %+v: root must match the key, cwd source scope", in)
			}
		}
	}
	if len(keys) != 2 {
		t.Fatalf("demo instances %v, want two (one per worktree)", keys)
	}

	// repo scope: both worktrees share one instance rooted at the main checkout.
	for _, wt := range wts {
		if got := callText(t, b, req("repo", wt), "cwd", `{}`); got != main {
			t.Errorf("repo-scoped cwd from %s = %q, want main checkout %q", wt, got, main)
		}
	}
	_ = linked

	// global: one rootless instance whose initialize carries no root fields.
	for _, wt := range wts {
		if got := callText(t, b, req("g", wt), "roots", `{}`); got != "[]" {
			t.Errorf("global roots from %s = %s, want []", wt, got)
		}
	}
	initLine := callText(t, b, req("g", main), "init", `{}`)
	for _, f := range []string{"roots", "rootUri", "workspaceFolders", "workspace"} {
		if strings.Contains(initLine, f) {
			t.Errorf("global initialize mentions %q: %s", f, initLine)
		}
	}
	n := 0
	for _, in := range b.Instances() {
		if in.Server == "g" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d global instances, want 1", n)
	}
}

func TestSymlinkedCwdSharesTheInstance(t *testing.T) {
	dir := t.TempDir()
	wts := testenv.Worktrees(t, filepath.Join(dir, "app"), map[string]string{"f": "x"})
	link := filepath.Join(dir, "link")
	if err := os.Symlink(wts[0], link); err != nil {
		t.Fatal(err)
	}
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeWorktree})
	p1 := callText(t, b, req("demo", wts[0]), "pid", `{}`)
	p2 := callText(t, b, req("demo", link), "pid", `{}`)
	if p1 != p2 || len(b.Instances()) != 1 {
		t.Errorf("symlinked cwd got pid %s vs %s, %d instances; want one shared instance", p2, p1, len(b.Instances()))
	}
}

func TestDegradedScopes(t *testing.T) {
	plain, _ := filepath.EvalSymlinks(t.TempDir())
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeWorktree, "s": config.ScopeSession})
	// Outside git: the worktree scope degrades to the cwd and still runs there.
	if got := callText(t, b, req("demo", plain), "cwd", `{}`); got != plain {
		t.Errorf("cwd outside git = %q, want %q", got, plain)
	}
	in := b.Instances()
	if len(in) != 1 || in[0].Key != "cwd:"+plain || in[0].Degraded == "" {
		t.Fatalf("instances %+v, want cwd:%s with a degraded reason", in, plain)
	}
	// No session: a session-scoped server gets a per-call instance, gone after.
	callText(t, b, req("s", plain), "pid", `{}`)
	for _, in := range b.Instances() {
		if in.Server == "s" {
			t.Errorf("per-call instance %+v still listed after its call", in)
		}
	}
	// With a session: one instance per session.
	r := req("s", plain)
	r.Context.Session = "sess-1"
	p1 := callText(t, b, r, "pid", `{}`)
	if p2 := callText(t, b, r, "pid", `{}`); p1 != p2 {
		t.Errorf("same session, different pids %s %s", p1, p2)
	}
}

func TestBadInputIsAClearErrorAndTheBrokerKeepsServing(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeCwd})
	cases := []struct {
		name  string
		r     broker.Request
		tool  string
		args  string
		kind  broker.Kind
		words []string
	}{
		{"unknown server", req("nope", dir), "echo", `{}`, broker.KindNotFound, []string{`"nope"`, "demo"}},
		{"unknown tool", req("demo", dir), "nope", `{}`, broker.KindNotFound, []string{`"nope"`, "mcpx tools demo"}},
		{"relative cwd", req("demo", "rel/dir"), "echo", `{"message":"x"}`, broker.KindBadRequest, []string{"Mcpx-Cwd"}},
		{"missing cwd", req("demo", filepath.Join(dir, "gone")), "echo", `{"message":"x"}`, broker.KindBadRequest, []string{"Mcpx-Cwd"}},
		{"cwd is a file", req("demo", file), "echo", `{"message":"x"}`, broker.KindBadRequest, []string{"Mcpx-Cwd"}},
		{"arguments the child rejects", req("demo", dir), "strict", `{"n":-1}`, broker.KindBadRequest, []string{"n must be"}},
		{"child crashes", req("demo", dir), "crash", `{"stderr":"kaput"}`, broker.KindChildFailed, []string{"status 3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.CallTool(t.Context(), tc.r, tc.tool, json.RawMessage(tc.args), nil)
			var be *broker.Error
			if !errors.As(err, &be) || be.Kind != tc.kind {
				t.Fatalf("err = %v (%T), want kind %s", err, err, tc.kind)
			}
			for _, w := range tc.words {
				if !strings.Contains(be.Error(), w) {
					t.Errorf("error %q does not mention %q", be.Error(), w)
				}
			}
			if tc.kind == broker.KindChildFailed && !strings.Contains(be.StderrTail, "kaput") {
				t.Errorf("crash error has stderr tail %q, want kaput", be.StderrTail)
			}
			// And the broker still serves.
			if got := callText(t, b, req("demo", dir), "echo", `{"message":"still here"}`); got != "still here" {
				t.Errorf("echo after bad input = %q", got)
			}
		})
	}
}

func TestRootAboveTheCallersAllowedRootsDegradesToCwd(t *testing.T) {
	dir := t.TempDir()
	wts := testenv.Worktrees(t, filepath.Join(dir, "home"), map[string]string{"proj/f": "x"})
	proj := filepath.Join(wts[0], "proj")
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeWorktree})
	r := req("demo", proj)
	r.Caller = broker.Caller{Name: "remote", Via: "tailnet", Rights: rights.Rights{{Roots: []string{proj}}}}
	if got := callText(t, b, r, "cwd", `{}`); got != proj {
		t.Errorf("cwd for a caller limited to %s = %q; its instance must not be rooted at the repo above", proj, got)
	}
	in := b.Instances()
	if len(in) != 1 || in[0].Key != "cwd:"+proj || !strings.Contains(in[0].Degraded, "outside the caller's allowed roots") {
		t.Errorf("instances %+v, want cwd:%s degraded", in, proj)
	}
	// A cwd outside the allowed roots is refused outright.
	r.Context.Cwd = wts[0]
	if _, err := b.CallTool(t.Context(), r, "cwd", nil, nil); broker.KindOf(err) != broker.KindForbidden {
		t.Errorf("cwd outside the allowed roots: err = %v, want forbidden", err)
	}
}

func TestToolErrorResultPassesThroughUnchanged(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeCwd})
	res, err := b.CallTool(t.Context(), req("demo", dir), "fail", json.RawMessage(`{"message":"nope"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ IsError bool }
	json.Unmarshal(res, &r)
	if !r.IsError || !strings.Contains(string(res), "nope") {
		t.Errorf("result %s, want isError with the message", res)
	}
}

func TestCallTimeout(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeCwd}, func(s *config.Server) {
		// Generous, so the follow-up echo fits even on a loaded machine.
		s.CallTimeout = config.Duration(2 * time.Second)
	})
	_, err := b.CallTool(t.Context(), req("demo", dir), "sleep", json.RawMessage(`{"ms":60000}`), nil)
	if broker.KindOf(err) != broker.KindTimeout {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if got := callText(t, b, req("demo", dir), "echo", `{"message":"ok"}`); got != "ok" {
		t.Errorf("echo after a timed-out call = %q", got)
	}
}

func TestProgressIsForwarded(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeCwd})
	var mu sync.Mutex
	var got []json.RawMessage
	res, err := b.CallTool(t.Context(), req("demo", dir), "progress", json.RawMessage(`{"steps":3}`), func(p json.RawMessage) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !strings.Contains(string(res), "done 3") {
		t.Errorf("progress %s, result %s; want 3 notifications and done 3", got, res)
	}
}

func TestHundredCallersOverTenKeys(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeCwd}, func(s *config.Server) { s.Max = 10 })
	dirs := make([]string, 10)
	for i := range dirs {
		dirs[i], _ = filepath.EvalSymlinks(t.TempDir())
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			r := req("demo", dirs[i%10])
			res, err := b.CallTool(t.Context(), r, "cwd", nil, nil)
			if err != nil {
				errs <- err
				return
			}
			var out struct{ Content []struct{ Text string } }
			json.Unmarshal(res, &out)
			if len(out.Content) != 1 || out.Content[0].Text != dirs[i%10] {
				errs <- fmt.Errorf("caller %d in %s got %s", i, dirs[i%10], res)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(b.Instances()); n != 10 {
		t.Errorf("%d instances, want 10", n)
	}
}

func TestPidScopedInstanceStopsWhenItsOwnerDies(t *testing.T) {
	// A long reap interval: only the owner check can stop the instance in time.
	b := startDemoBroker(t, demoSetup{scopes: map[string]config.ScopeKind{"demo": config.ScopePid}, opts: broker.Options{ReapInterval: time.Hour}})
	owner := exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	r := req("demo", "")
	r.Context.Pid = owner.Process.Pid
	childPid := callText(t, b, r, "pid", `{}`)
	if in := b.Instances(); len(in) != 1 || in[0].Key != fmt.Sprintf("pid:%d", owner.Process.Pid) {
		t.Fatalf("instances %+v, want one keyed by the owner's pid", in)
	}
	// A remote caller's declared pid means nothing: it lands on a call: key.
	remote := r
	remote.Caller = broker.Caller{Name: "remote", Via: "tailnet", Rights: rights.Rights{{}}}
	callText(t, b, remote, "pid", `{}`)
	if n := len(b.Instances()); n != 1 {
		t.Errorf("a remote caller's Mcpx-Pid created a pid instance (%d instances)", n)
	}

	owner.Process.Kill()
	owner.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(b.Instances()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("instance of dead owner still there: %+v", b.Instances())
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid, _ := strconv.Atoi(childPid)
	for i := 0; syscall.Kill(pid, 0) == nil; i++ {
		if i > 200 {
			t.Fatalf("child %d of a dead owner still running", pid)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func TestRemoteCallersDoNotShareSessionsByID(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"s": config.ScopeSession})
	as := func(name string, local bool) broker.Request {
		r := req("s", "")
		r.Caller = broker.Caller{Name: name, Via: "tailnet", Local: local, Owner: local, Rights: rights.Rights{{}}}
		r.Context.Session = "S"
		return r
	}
	alice := callText(t, b, as("alice", false), "pid", `{}`)
	mallory := callText(t, b, as("mallory", false), "pid", `{}`)
	if alice == mallory {
		t.Errorf("two remote callers sending the same session id share child %s", alice)
	}
	if again := callText(t, b, as("alice", false), "pid", `{}`); again != alice {
		t.Errorf("alice's session moved from %s to %s", alice, again)
	}
	// The daemon's own user, over the socket or over TCP with the token, is
	// one user: one session id, one child.
	l1 := callText(t, b, as("local:1", true), "pid", `{}`)
	l2 := callText(t, b, as("local:2", true), "pid", `{}`)
	tcp := as("loopback", false)
	tcp.Caller.Via, tcp.Caller.Owner = "tcp-loopback", true
	l3 := callText(t, b, tcp, "pid", `{}`)
	if l1 != l2 || l1 != l3 {
		t.Errorf("the owner's callers with one session id got children %s, %s, %s; want one", l1, l2, l3)
	}
}

func TestCeilingDirsStopDiscovery(t *testing.T) {
	dir := t.TempDir()
	wts := testenv.Worktrees(t, filepath.Join(dir, "home"), map[string]string{"proj/f": "x"})
	home := wts[0]
	proj := filepath.Join(home, "proj")
	b := startDemoBroker(t, demoSetup{
		scopes: map[string]config.ScopeKind{"demo": config.ScopeWorktree},
		config: func(c *config.Config) { c.CeilingDirs = []string{home} },
	})
	// proj is inside the home "dotfiles" repo, but the walk may not enter
	// home: proj is outside git, and works in itself.
	if got := callText(t, b, req("demo", proj), "cwd", `{}`); got != proj {
		t.Errorf("cwd from %s = %q; the ceiling must keep it out of the repo at %s", proj, got, home)
	}
	if _, err := config.Parse([]byte(`{"ceilingDirs":["rel"],"servers":{}}`), "c.json"); err == nil || !strings.Contains(err.Error(), "ceilingDirs[0]") {
		t.Errorf("relative ceiling: err = %v", err)
	}
}

// Config problems keep their kind now that package config reports them.
func TestKindOfConfigProblems(t *testing.T) {
	_, parseErr := config.Parse([]byte(`{"servers":{"a":{"comand":"x"}}}`), "c.json")
	_, loadErr := config.Load(filepath.Join(t.TempDir(), "missing.json"))
	for _, err := range []error{parseErr, loadErr} {
		if k := broker.KindOf(err); err == nil || k != broker.KindConfig {
			t.Errorf("KindOf(%v) = %s, want config", err, k)
		}
	}
	if _, err := broker.New(broker.Options{}); broker.KindOf(err) != broker.KindConfig {
		t.Errorf("New without a config: %v", err)
	}
}

// The unknown-server error names only the servers the caller may use.
func TestUnknownServerListsOnlyTheCallersServers(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"public": config.ScopeGlobal, "internal-billing": config.ScopeGlobal})
	for _, tc := range []struct {
		servers     []string
		want, never string
	}{
		{[]string{"public"}, "configured servers: public", "internal-billing"},
		{[]string{}, "may use no server", "public"},
		{nil, "internal-billing, public", ""},
	} {
		r := req("nope", "")
		r.Caller = broker.Caller{Name: "alice", Via: "tailnet", Rights: rights.Rights{{Servers: tc.servers}}}
		_, err := b.Target(r)
		var be *broker.Error
		if !errors.As(err, &be) || be.Kind != broker.KindNotFound {
			t.Fatalf("servers %v: err %v, want not-found", tc.servers, err)
		}
		if !strings.Contains(be.Error(), tc.want) || (tc.never != "" && strings.Contains(be.Error(), tc.never)) {
			t.Errorf("servers %v: %q; want %q and not %q", tc.servers, be.Error(), tc.want, tc.never)
		}
	}
}

// TestServersListOnlyTheCallersServers: listings and lookups show a caller
// only the servers its rights name; to it, the others do not exist.
func TestServersListOnlyTheCallersServers(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"public": config.ScopeGlobal, "internal-billing": config.ScopeGlobal})
	alice := broker.Caller{Name: "alice", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"public"}}}}
	var names []string
	for _, si := range b.Servers(alice) {
		names = append(names, si.Name)
	}
	if !slices.Equal(names, []string{"public"}) {
		t.Errorf("Servers(alice) = %v, want [public]", names)
	}
	if n := len(b.Servers(broker.Caller{Name: "nobody", Rights: rights.Rights{{Servers: []string{}}}})); n != 0 {
		t.Errorf("a caller with no servers sees %d", n)
	}
	if n := len(b.Servers(broker.Caller{Name: "owner", Local: true, Rights: rights.Rights{{}}})); n != 2 {
		t.Errorf("the owner sees %d servers, want 2", n)
	}
	if _, err := b.Server("public", alice); err != nil {
		t.Errorf("Server(public, alice): %v", err)
	}
	_, err := b.Server("internal-billing", alice)
	if broker.KindOf(err) != broker.KindNotFound || strings.Contains(err.Error(), "internal-billing,") {
		t.Errorf("Server(internal-billing, alice) = %v, want not found naming only public", err)
	}
}

// A misspelt server or tool name gets a "did you mean" naming the closest
// one the caller may use; a name close to nothing gets the list alone; a
// server the caller may not use is never suggested.
func TestNotFoundSuggests(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"public": config.ScopeGlobal, "internal-billing": config.ScopeGlobal})
	hint := func(err error) string {
		t.Helper()
		var be *broker.Error
		if !errors.As(err, &be) || be.Kind != broker.KindNotFound {
			t.Fatalf("err %v, want not-found", err)
		}
		return be.Hint
	}
	target := func(r broker.Request) error { _, err := b.Target(r); return err }
	if h := hint(target(req("publc", ""))); !strings.HasPrefix(h, `did you mean "public"?`) {
		t.Errorf("misspelt server: hint %q", h)
	}
	r := req("internal-biling", "")
	r.Caller = broker.Caller{Name: "alice", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"public"}}}}
	if err := target(r); strings.Contains(err.Error(), "internal-billing") {
		t.Errorf("a server the caller may not use was suggested: %v", err)
	}
	if h := hint(target(req("zzzzzz", ""))); strings.Contains(h, "did you mean") {
		t.Errorf("nothing close: hint %q", h)
	}
	_, err := b.CallTool(t.Context(), req("public", ""), "ehco", json.RawMessage(`{}`), nil)
	if h := hint(err); !strings.HasPrefix(h, `did you mean "echo"?`) || !strings.Contains(h, "mcpx tools public") {
		t.Errorf("misspelt tool: hint %q", h)
	}
}
