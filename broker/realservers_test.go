package broker_test

// Real MCP servers through the broker: the npm reference servers (pinned in
// testdata/npm) and gopls. Each test builds real git repositories with linked
// worktrees and checks that every caller lands on an instance whose roots or
// working directory are its own worktree. Missing node/npm packages/gopls
// skip these tests locally and fail them in CI (MCPX_REQUIRE_DEPS=1).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

const (
	everythingPkg = "@modelcontextprotocol/server-everything"
	filesystemPkg = "@modelcontextprotocol/server-filesystem"
)

// localCaller is a same-machine caller with full rights, as the unix socket
// authenticates one.
// localCaller is the daemon's owner (the CLI's caller), whose children are
// confined only when the config says so: these tests are of the servers
// themselves. Confined real servers are the sandbox's tests'.
var localCaller = broker.Caller{Name: "local:test", Via: "unix", Local: true, Owner: true, Rights: rights.Rights{{Admin: true}}}

// newRealBroker starts a broker over servers (config JSON objects by name)
// and stops it, checking that no child outlives the test, at cleanup. Each
// child's environment carries a marker so leaked grandchildren are found too.
// newRealBroker starts a broker of servers; top, if given, adds top-level
// config sections ("limits", …).
func newRealBroker(t *testing.T, servers map[string]map[string]any, top ...map[string]any) *broker.Broker {
	t.Helper()
	return newRealBrokerOf(t, "servers", servers, top...)
}

// newRealBrokerOf is newRealBroker with the servers under key: "servers",
// or "mcpServers" for a client's format.
func newRealBrokerOf(t *testing.T, key string, servers map[string]map[string]any, top ...map[string]any) *broker.Broker {
	t.Helper()
	proctest.CheckNoLeaks(t) // first, so its cleanup runs after Close
	for _, s := range servers {
		env, _ := s["env"].(map[string]string)
		if env == nil {
			env = map[string]string{}
		}
		env[proctest.MarkerEnv] = proctest.Marker(t)
		s["env"] = env
	}
	doc := map[string]any{key: servers}
	for _, m := range top {
		maps.Copy(doc, m)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(data, "realservers_test.json")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, data)
	}
	b, err := broker.New(broker.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// request is a call from cwd.
func request(server, cwd string) broker.Request {
	return broker.Request{Caller: localCaller, Server: server, Context: broker.CallContext{Cwd: cwd}}
}

// callResult is the part of an MCP CallToolResult the tests read.
type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r callResult) text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// call calls tool and fails t on a broker error or a result that is not
// valid JSON; a tool-level error (isError) is returned for the caller to judge.
func call(t *testing.T, ctx context.Context, b *broker.Broker, r broker.Request, tool string, args any) callResult {
	t.Helper()
	res, err := callErr(ctx, b, r, tool, args, nil)
	if err != nil {
		t.Fatalf("%s.%s from %s: %v", r.Server, tool, r.Context.Cwd, err)
	}
	return res
}

func callErr(ctx context.Context, b *broker.Broker, r broker.Request, tool string, args any, onProgress func(json.RawMessage)) (callResult, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return callResult{}, err
	}
	out, err := b.CallTool(ctx, r, tool, raw, onProgress)
	if err != nil {
		return callResult{}, err
	}
	var res callResult
	if err := json.Unmarshal(out, &res); err != nil {
		return callResult{}, fmt.Errorf("result is not a CallToolResult: %v\n%s", err, out)
	}
	return res, nil
}

// toolNames lists the server's tools as the caller at cwd sees them.
func toolNames(t *testing.T, ctx context.Context, b *broker.Broker, r broker.Request) []string {
	t.Helper()
	raw, err := b.Tools(ctx, r)
	if err != nil {
		t.Fatalf("tools of %s from %s: %v", r.Server, r.Context.Cwd, err)
	}
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatalf("tools of %s: %v\n%s", r.Server, err, raw)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// instancesOf returns the server's instances by key.
func instancesOf(b *broker.Broker, server string) map[string]broker.Instance {
	m := map[string]broker.Instance{}
	for _, in := range b.Instances() {
		if in.Server == server {
			m[in.Key] = in
		}
	}
	return m
}

// repoWithWorktrees makes a committed repo "repo" and linked worktrees
// "wt1", "wt2" in a temp dir; it returns their canonical paths.
func repoWithWorktrees(t *testing.T, files map[string]string) (main, wt1, wt2 string) {
	t.Helper()
	if files == nil {
		files = map[string]string{"README": "test repo\n"}
	}
	p := testenv.Worktrees(t, filepath.Join(t.TempDir(), "repo"), files, "wt1", "wt2")
	return p[0], p[1], p[2]
}

func everythingServer(t *testing.T, scope config.ScopeKind) map[string]any {
	return map[string]any{
		"command": testenv.Node(t),
		"args":    []string{testenv.NPMPackageBin(t, everythingPkg)},
		"scope":   string(scope),
	}
}

func TestEverythingEcho(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	main, _, _ := repoWithWorktrees(t, nil)
	b := newRealBroker(t, map[string]map[string]any{"everything": everythingServer(t, config.ScopeWorktree)})

	res := call(t, ctx, b, request("everything", main), "echo", map[string]any{"message": "hello through mcpx"})
	if res.IsError || res.text() != "Echo: hello through mcpx" {
		t.Errorf("echo = %+v, want text %q", res, "Echo: hello through mcpx")
	}
	// The reference server's tool names this suite relies on.
	names := toolNames(t, ctx, b, request("everything", main))
	for _, want := range []string{"echo", "get-roots-list", "get-sum", "trigger-long-running-operation"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools = %v, missing %q", names, want)
		}
	}
}

// get-roots-list answers the roots the broker gave the child: each worktree's
// instance its own worktree, and a global instance none (the server only
// registers the tool for clients that declare the roots capability, which a
// rootless initialize does not).
func TestEverythingRootsPerScope(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	main, wt1, wt2 := repoWithWorktrees(t, map[string]string{"deep/down/x.txt": "x\n"})
	b := newRealBroker(t, map[string]map[string]any{
		"wt":   everythingServer(t, config.ScopeWorktree),
		"glob": everythingServer(t, config.ScopeGlobal),
	})

	for _, c := range []struct {
		cwd, root string
	}{
		{wt1, wt1},
		{wt2, wt2},
		{main, main},
		{filepath.Join(wt1, "deep", "down"), wt1}, // same key as wt1's top level
	} {
		res := call(t, ctx, b, request("wt", c.cwd), "get-roots-list", map[string]any{})
		got := res.text()
		want := fmt.Sprintf("1. %s\n   URI: file://%s\n", filepath.Base(c.root), c.root)
		if res.IsError || !strings.Contains(got, "(1 total)") || !strings.Contains(got, want) {
			t.Errorf("get-roots-list from %s:\n%s\nwant exactly one root %q", c.cwd, got, want)
		}
	}
	inst := instancesOf(b, "wt")
	for _, root := range []string{main, wt1, wt2} {
		in, ok := inst["worktree:"+root]
		if !ok {
			t.Errorf("no instance with key worktree:%s; instances: %v", root, slices.Collect(mapKeys(inst)))
			continue
		}
		if in.Root != root {
			t.Errorf("instance %s: root %q, want %q", in.Key, in.Root, root)
		}
	}
	if len(inst) != 3 {
		t.Errorf("%d instances of wt, want 3 (one per worktree): %v", len(inst), slices.Collect(mapKeys(inst)))
	}

	// Global: no roots capability, so no get-roots-list tool at all.
	for _, cwd := range []string{wt1, wt2} {
		if names := toolNames(t, ctx, b, request("glob", cwd)); slices.Contains(names, "get-roots-list") || !slices.Contains(names, "echo") {
			t.Errorf("global tools from %s = %v; want echo and no get-roots-list", cwd, names)
		}
	}
	res, err := callErr(ctx, b, request("glob", wt1), "get-roots-list", map[string]any{}, nil)
	switch {
	case err != nil:
		if k := broker.KindOf(err); k != broker.KindNotFound && k != broker.KindBadRequest {
			t.Errorf("global get-roots-list: error kind %s (%v), want not-found or bad-request", k, err)
		}
	case !res.IsError || strings.Contains(res.text(), "file://"):
		t.Errorf("global get-roots-list = %+v, want a tool-not-found error and no roots", res)
	}
	if inst := instancesOf(b, "glob"); len(inst) != 1 || inst["global"].Root != "" {
		t.Errorf("global instances = %+v, want one with key global and no root", inst)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         float64         `json:"total"`
}

func TestEverythingProgress(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	main, _, _ := repoWithWorktrees(t, nil)
	b := newRealBroker(t, map[string]map[string]any{"everything": everythingServer(t, config.ScopeWorktree)})

	var (
		mu       sync.Mutex
		progress []progressParams
		returned bool
		late     int
	)
	onProgress := func(raw json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		if returned {
			late++
		}
		var p progressParams
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Errorf("progress params %s: %v", raw, err)
		}
		progress = append(progress, p)
	}
	// duration is in seconds: 4 steps of 100ms.
	res, err := callErr(ctx, b, request("everything", main), "trigger-long-running-operation",
		map[string]any{"duration": 0.4, "steps": 4}, onProgress)
	mu.Lock()
	returned = true
	got := slices.Clone(progress)
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(res.text(), "Long running operation completed") {
		t.Errorf("result = %+v", res)
	}
	if len(got) < 2 {
		t.Fatalf("%d progress notifications before the result, want >= 2 (4 steps): %+v", len(got), got)
	}
	for i, p := range got {
		if p.Total != 4 || (i > 0 && p.Progress <= got[i-1].Progress) {
			t.Errorf("progress %d = %+v; want total 4, increasing progress: %+v", i, p, got)
		}
	}
	// Progress for this call ends with its result.
	call(t, ctx, b, request("everything", main), "echo", map[string]any{"message": "after"})
	mu.Lock()
	defer mu.Unlock()
	if late > 0 {
		t.Errorf("%d progress notifications arrived after CallTool returned", late)
	}
}

// Cancelling the caller's context mid-call returns at once, and the child
// (which ignores the cancellation and keeps running the operation) stays in
// the pool and answers the next call.
func TestEverythingCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	main, _, _ := repoWithWorktrees(t, nil)
	b := newRealBroker(t, map[string]map[string]any{"everything": everythingServer(t, config.ScopeWorktree)})
	r := request("everything", main)
	call(t, ctx, b, r, "echo", map[string]any{"message": "warm"})
	before := instancesOf(b, "everything")

	callCtx, cancelCall := context.WithCancel(ctx)
	defer cancelCall()
	var once sync.Once
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		// 50 steps of 1s: far longer than this test may take.
		_, err := callErr(callCtx, b, r, "trigger-long-running-operation",
			map[string]any{"duration": 50, "steps": 50}, func(json.RawMessage) { once.Do(func() { close(started) }) })
		done <- err
	}()
	select {
	case <-started: // the child is running the operation
	case err := <-done:
		t.Fatalf("long-running call ended before its first progress: %v", err)
	case <-ctx.Done():
		t.Fatal("no progress from the long-running operation")
	}
	cancelCall()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("cancelled call returned no error")
		}
		if !errors.Is(err, context.Canceled) {
			t.Logf("cancelled call: %v (kind %s)", err, broker.KindOf(err))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled call did not return")
	}

	res := call(t, ctx, b, r, "echo", map[string]any{"message": "still here"})
	if res.text() != "Echo: still here" {
		t.Errorf("echo after cancel = %+v", res)
	}
	after := instancesOf(b, "everything")
	if len(after) != 1 || len(before) != 1 {
		t.Fatalf("instances before %+v, after %+v; want the same single instance", before, after)
	}
	for k, in := range after {
		if was := before[k]; in.Pid != was.Pid || in.Restarts != was.Restarts {
			t.Errorf("the child was replaced by the cancellation: before %+v, after %+v", was, in)
		}
	}
}

// server-filesystem started with no directories takes its allowed directories
// from the client's roots: each worktree's instance may read that worktree
// and nothing else.
func TestFilesystemWorktreeRoots(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	main, wt1, wt2 := repoWithWorktrees(t, nil)
	for _, wt := range []string{main, wt1, wt2} {
		testenv.WriteFiles(t, wt, map[string]string{"who.txt": filepath.Base(wt) + "\n"})
	}
	b := newRealBroker(t, map[string]map[string]any{"fs": {
		"command": testenv.Node(t),
		"args":    []string{testenv.NPMPackageBin(t, filesystemPkg)},
		"scope":   "worktree",
	}})

	for _, c := range []struct{ own, other string }{{wt1, wt2}, {wt2, wt1}, {main, wt1}} {
		r := request("fs", c.own)
		// The server asks roots/list after notifications/initialized and
		// applies the answer asynchronously, so the very first call can
		// race it; the answer must converge on the caller's worktree.
		var got string
		for {
			res := call(t, ctx, b, r, "list_allowed_directories", map[string]any{})
			got = res.text()
			if strings.Contains(got, c.other) {
				t.Fatalf("fs from %s may access %s:\n%s", c.own, c.other, got)
			}
			if got == "Allowed directories:\n"+c.own || ctx.Err() != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if want := "Allowed directories:\n" + c.own; got != want {
			t.Errorf("list_allowed_directories from %s = %q, want %q", c.own, got, want)
		}

		res := call(t, ctx, b, r, "read_text_file", map[string]any{"path": filepath.Join(c.own, "who.txt")})
		if res.IsError || strings.TrimSpace(res.text()) != filepath.Base(c.own) {
			t.Errorf("read own who.txt from %s = %+v", c.own, res)
		}
		res = call(t, ctx, b, r, "read_text_file", map[string]any{"path": filepath.Join(c.other, "who.txt")})
		if !res.IsError {
			t.Errorf("fs from %s read %s's file: %+v", c.own, c.other, res)
		}
	}
}

// gopls's workspace is its process cwd: scoped to the worktree, each caller
// gets a gopls that sees its own checkout. The linked worktree's branch adds
// a function the main checkout does not have, so the answers tell them apart.
func TestGoplsWorktree(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	gopls := testenv.Gopls(t)
	main, wt1, _ := repoWithWorktrees(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n",
		"greet/greet.go": `// Package greet says hello.
package greet

// Hello returns a greeting for name.
func Hello(name string) string { return "hello, " + name }
`,
	})
	testenv.WriteFiles(t, wt1, map[string]string{"greet/bye.go": `package greet

// Bye says goodbye to name.
func Bye(name string) string { return "bye, " + name }
`})
	testenv.RunGit(t, wt1, "add", "-A")
	testenv.RunGit(t, wt1, "commit", "-q", "-m", "greet: add Bye")

	home := t.TempDir()
	gocache, err := goEnv("GOCACHE")
	if err != nil || gocache == "" || gocache == "off" {
		gocache = filepath.Join(home, "gocache")
	}
	// Offline and hermetic: no proxy, no toolchain downloads, no go.work
	// from outside, the user's build cache shared (it is safe for concurrent
	// use and saves re-checking the standard library).
	goEnv := func() map[string]string {
		return map[string]string{
			"HOME": home, "GOCACHE": gocache, "GOFLAGS": "-mod=mod", "GOPROXY": "off",
			"GOTOOLCHAIN": "local", "GOWORK": "off", "GOTELEMETRY": "off",
		}
	}
	b := newRealBroker(t, map[string]map[string]any{
		"gopls": {
			"command":      gopls,
			"args":         []string{"mcp"},
			"scope":        "worktree",
			"env":          goEnv(),
			"callTimeout":  "3m",
			"startTimeout": "1m",
		},
		// The failure the broker exists to fix: a gopls started anywhere
		// but the caller's module answers empty content, not an error.
		"gopls-elsewhere": {
			"command":      gopls,
			"args":         []string{"mcp"},
			"scope":        "global",
			"cwd":          t.TempDir(),
			"env":          goEnv(),
			"callTimeout":  "3m",
			"startTimeout": "1m",
		},
	})

	res := call(t, ctx, b, request("gopls-elsewhere", wt1), "go_package_api", map[string]any{"packagePaths": []string{"example.com/m/greet"}})
	t.Logf("go_package_api from a gopls outside the module: isError=%v, text %q", res.IsError, res.text())
	if strings.Contains(res.text(), "func Hello") {
		t.Fatalf("a gopls outside the module knows example.com/m/greet, so this test cannot tell a right cwd from a wrong one:\n%s", res.text())
	}

	for _, c := range []struct {
		cwd      string
		want     []string
		dontWant []string
	}{
		{cwd: wt1, want: []string{"func Hello(name string) string", "func Bye(name string) string"}},
		{cwd: main, want: []string{"func Hello(name string) string"}, dontWant: []string{"Bye"}},
		{cwd: filepath.Join(wt1, "greet"), want: []string{"func Bye(name string) string"}},
	} {
		r := request("gopls", c.cwd)
		res := call(t, ctx, b, r, "go_package_api", map[string]any{"packagePaths": []string{"example.com/m/greet"}})
		api := res.text()
		if res.IsError || api == "" {
			t.Errorf("go_package_api from %s: empty or error (gopls outside the caller's module answers empty): %+v", c.cwd, res)
		}
		for _, w := range c.want {
			if !strings.Contains(api, w) {
				t.Errorf("go_package_api from %s lacks %q:\n%s", c.cwd, w, api)
			}
		}
		for _, w := range c.dontWant {
			if strings.Contains(api, w) {
				t.Errorf("go_package_api from %s mentions %q (another worktree's code):\n%s", c.cwd, w, api)
			}
		}
	}
	for _, root := range []string{wt1, main} {
		res := call(t, ctx, b, request("gopls", root), "go_workspace", map[string]any{})
		if ws := res.text(); res.IsError || !strings.Contains(ws, filepath.Join(root, "go.mod")) {
			t.Errorf("go_workspace from %s does not name %s/go.mod:\n%s", root, root, ws)
		}
	}
	if inst := instancesOf(b, "gopls"); len(inst) != 2 {
		t.Errorf("gopls instances = %v, want one per worktree", slices.Collect(mapKeys(inst)))
	}
}

func goEnv(name string) (string, error) {
	out, err := exec.Command("go", "env", name).Output()
	return strings.TrimSpace(string(out)), err
}

// TestFilesystemKeepsItsDirectoryWithoutRoots (real-use 3): server-filesystem
// replaces the directories its arguments name with the MCP roots it is
// offered. A client's config file gets the client's semantics (no roots
// mcpx invented), and an mcpx server with "roots": false keeps its
// directory too: called from a worktree, it still sees only its directory.
func TestFilesystemKeepsItsDirectoryWithoutRoots(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	main, wt1, _ := repoWithWorktrees(t, nil)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	testenv.WriteFiles(t, dir, map[string]string{"given.txt": "given\n"})
	testenv.WriteFiles(t, wt1, map[string]string{"who.txt": "wt1\n"})
	fs := func(extra map[string]any) map[string]map[string]any {
		s := map[string]any{"command": testenv.Node(t), "args": []string{testenv.NPMPackageBin(t, filesystemPkg), dir}}
		maps.Copy(s, extra)
		return map[string]map[string]any{"filesystem": s}
	}
	for _, tc := range []struct {
		name string
		b    func(t *testing.T) *broker.Broker
	}{
		{"client format", func(t *testing.T) *broker.Broker { return newRealBrokerOf(t, "mcpServers", fs(nil)) }},
		{"roots false", func(t *testing.T) *broker.Broker {
			return newRealBroker(t, fs(map[string]any{"scope": "worktree", "roots": false}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b(t)
			for _, cwd := range []string{wt1, main} {
				r := request("filesystem", cwd)
				if got, want := call(t, ctx, b, r, "list_allowed_directories", map[string]any{}).text(), "Allowed directories:\n"+dir; got != want {
					t.Errorf("from %s: %q, want %q", cwd, got, want)
				}
				if res := call(t, ctx, b, r, "read_text_file", map[string]any{"path": filepath.Join(wt1, "who.txt")}); !res.IsError {
					t.Errorf("from %s: read the worktree's file: %+v", cwd, res)
				}
				if res := call(t, ctx, b, r, "read_text_file", map[string]any{"path": filepath.Join(dir, "given.txt")}); res.IsError {
					t.Errorf("from %s: its own directory's file: %+v", cwd, res)
				}
			}
		})
	}
}
