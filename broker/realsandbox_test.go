package broker_test

// Real MCP servers confined ("sandbox" set, docs/sandbox.md): each still
// does its work inside its boundary, and the kernel, not the server,
// refuses what lies beyond it. Missing node, npm packages, gopls or nix
// skip these tests locally and fail them in CI (MCPX_REQUIRE_DEPS=1), as
// does a kernel that cannot confine a child.

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/npmtest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

const memoryPkg = "@modelcontextprotocol/server-memory"

// needConfinement skips (or, with the test dependencies required, fails)
// where this kernel cannot confine a child with the default sandbox.
func needConfinement(t *testing.T) {
	t.Helper()
	spec := &confine.Spec{Why: confine.WhyConfig, Limits: confine.DefaultLimits}
	p := spec.Policy(confine.Facts{TmpDir: t.TempDir()})
	if _, err := sandbox.Plan(&p, sandbox.Probe()); err != nil {
		if os.Getenv(testenv.RequireDepsEnv) == "1" {
			t.Fatalf("this kernel cannot confine a child: %v", err)
		}
		t.Skipf("this kernel cannot confine a child: %v", err)
	}
}

// confined is def with "sandbox": true (or the given setting).
func confined(def map[string]any, setting ...any) map[string]any {
	out := maps.Clone(def)
	out["sandbox"] = true
	if len(setting) > 0 {
		out["sandbox"] = setting[0]
	}
	return out
}

// watches are the confined brokers' watches (confinedBroker), for
// checkConfined to note their children in.
var watches sync.Map // *broker.Broker -> *testenv.Confined

// confinedBroker is newRealBroker watching its confined children: none
// leaves a cgroup or a network namespace behind (testenv.WatchConfined).
func confinedBroker(t *testing.T, servers map[string]map[string]any) *broker.Broker {
	t.Helper()
	k := sandbox.Probe()
	w := testenv.WatchConfined(t, k.Memory.Dir, k.Pids.Dir)
	b := newRealBroker(t, servers)
	watches.Store(b, w)
	t.Cleanup(func() { // before the broker closes
		noteConfined(b)
		watches.Delete(b)
		if w.Noted() == 0 {
			t.Errorf("no confined child was seen: nothing was checked")
		}
	})
	return b
}

// noteConfined notes b's running confined children in its watch.
func noteConfined(b *broker.Broker) {
	w, ok := watches.Load(b)
	if !ok {
		return
	}
	for _, in := range b.Instances() {
		if in.Sandbox != nil && in.Pid != 0 {
			w.(*testenv.Confined).Note(in.Pid)
		}
	}
}

// checkConfined fails t unless every instance of server is confined, with
// the filesystem enforced by the kernel.
func checkConfined(t *testing.T, b *broker.Broker, server string) {
	t.Helper()
	noteConfined(b)
	n := 0
	for _, in := range b.Instances() {
		if in.Server != server {
			continue
		}
		n++
		if in.Sandbox == nil {
			t.Errorf("instance %s of %s is not confined", in.ID, server)
			continue
		}
		if f, ok := in.Sandbox.Enforcement.Feature(sandbox.FeatureFilesystem); !ok || !f.Enforced {
			t.Errorf("instance %s: the filesystem is not enforced: %v", in.ID, in.Sandbox.Enforcement)
		}
	}
	if n == 0 {
		t.Errorf("no instance of %s", server)
	}
}

// refused fails t unless res is the kernel's refusal, as the server's own
// error.
func refused(t *testing.T, what string, res callResult) {
	t.Helper()
	if !res.IsError || !strings.Contains(strings.ToLower(res.text()), "permission denied") && !strings.Contains(res.text(), "EACCES") {
		t.Errorf("%s: %+v, want the kernel's permission denied as the server's error", what, res)
	}
}

// TestSandboxFilesystemWidened: server-filesystem in worktree A told, by
// its arguments, that it may also use worktree B (its own idea of its
// boundary widened past the instance's) lists and reads A, writes A, and
// still cannot list or read B: the kernel refuses. The same server
// unconfined reads B, so the test can fail. (A client's own roots reach a
// child only through "callerRoots", in a call's input round, which
// server-filesystem never asks: its arguments are how its boundary is
// widened.)
func TestSandboxFilesystemWidened(t *testing.T) {
	t.Parallel()
	needConfinement(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	_, a, bwt := repoWithWorktrees(t, nil)
	testenv.WriteFiles(t, a, map[string]string{"who.txt": "a\n"})
	testenv.WriteFiles(t, bwt, map[string]string{"who.txt": "b\n"})
	fs := map[string]any{
		"command": testenv.Node(t),
		"args":    []string{testenv.NPMPackageBin(t, filesystemPkg), "${mcpx.root}", bwt},
		"scope":   "worktree",
		"roots":   false,
	}
	b := confinedBroker(t, map[string]map[string]any{"fs": confined(fs), "open": fs})

	r := request("fs", a)
	if got := call(t, ctx, b, r, "list_allowed_directories", map[string]any{}).text(); !strings.Contains(got, bwt) || !strings.Contains(got, a) {
		t.Fatalf("the widened server's allowed directories: %q, want both worktrees (else nothing is tested)", got)
	}
	if res := call(t, ctx, b, r, "read_text_file", map[string]any{"path": filepath.Join(a, "who.txt")}); res.IsError || strings.TrimSpace(res.text()) != "a" {
		t.Errorf("reading its own worktree: %+v", res)
	}
	if res := call(t, ctx, b, r, "list_directory", map[string]any{"path": a}); res.IsError || !strings.Contains(res.text(), "who.txt") {
		t.Errorf("listing its own worktree: %+v", res)
	}
	if res := call(t, ctx, b, r, "write_file", map[string]any{"path": filepath.Join(a, "new.txt"), "content": "x"}); res.IsError {
		t.Errorf("writing its own worktree: %+v", res)
	}
	refused(t, "listing worktree B", call(t, ctx, b, r, "list_directory", map[string]any{"path": bwt}))
	refused(t, "reading worktree B", call(t, ctx, b, r, "read_text_file", map[string]any{"path": filepath.Join(bwt, "who.txt")}))
	refused(t, "writing worktree B", call(t, ctx, b, r, "write_file", map[string]any{"path": filepath.Join(bwt, "planted.txt"), "content": "x"}))
	if _, err := os.Stat(filepath.Join(bwt, "planted.txt")); err == nil {
		t.Errorf("the confined server wrote in worktree B")
	}
	checkConfined(t, b, "fs")

	if res := call(t, ctx, b, request("open", a), "read_text_file", map[string]any{"path": filepath.Join(bwt, "who.txt")}); res.IsError || strings.TrimSpace(res.text()) != "b" {
		t.Errorf("the same server unconfined reading worktree B: %+v; want it read, or this test cannot fail", res)
	}
}

// TestSandboxEverythingAndMemory: server-everything and server-memory
// confined do their work: echo, a sum, a long operation's progress; a
// knowledge graph kept in a file of the worktree (MEMORY_FILE_PATH: the
// default is beside the server's own code, which a confined child may
// read and not write) and read back by a fresh child.
func TestSandboxEverythingAndMemory(t *testing.T) {
	t.Parallel()
	needConfinement(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	main, _, _ := repoWithWorktrees(t, nil)
	memory := map[string]any{
		"command": testenv.Node(t),
		"args":    []string{testenv.NPMPackageBin(t, memoryPkg)},
		"scope":   "worktree",
		"env":     map[string]string{"MEMORY_FILE_PATH": "${mcpx.root}/.mcp-memory.jsonl"},
	}
	b := confinedBroker(t, map[string]map[string]any{
		"everything": confined(everythingServer(t, config.ScopeWorktree)),
		"memory":     confined(memory),
	})

	r := request("everything", main)
	if res := call(t, ctx, b, r, "echo", map[string]any{"message": "confined"}); res.IsError || res.text() != "Echo: confined" {
		t.Errorf("echo: %+v", res)
	}
	if res := call(t, ctx, b, r, "get-sum", map[string]any{"a": 2, "b": 3}); res.IsError || !strings.Contains(res.text(), "5") {
		t.Errorf("get-sum: %+v", res)
	}
	progress := 0
	res, err := callErr(ctx, b, r, "trigger-long-running-operation", map[string]any{"duration": 0.2, "steps": 2}, func(json.RawMessage) { progress++ })
	if err != nil || res.IsError || progress == 0 {
		t.Errorf("a long operation: %+v, %v, %d progress notifications", res, err, progress)
	}
	checkConfined(t, b, "everything")

	m := request("memory", main)
	entity := map[string]any{"entities": []map[string]any{{"name": "mcpx", "entityType": "project", "observations": []string{"confined by the kernel"}}}}
	if res := call(t, ctx, b, m, "create_entities", entity); res.IsError {
		t.Fatalf("create_entities: %+v", res)
	}
	if data, err := os.ReadFile(filepath.Join(main, ".mcp-memory.jsonl")); err != nil || !strings.Contains(string(data), "confined by the kernel") {
		t.Errorf("the memory file in the worktree: %q, %v", data, err)
	}
	checkConfined(t, b, "memory")
	for _, in := range instancesOf(b, "memory") {
		if err := b.StopInstance(ctx, in.ID); err != nil {
			t.Fatal(err)
		}
	}
	if res := call(t, ctx, b, m, "read_graph", map[string]any{}); res.IsError || !strings.Contains(res.text(), "confined by the kernel") {
		t.Errorf("a fresh child reading the graph back: %+v", res)
	}
}

// TestSandboxGopls: gopls confined, one per worktree, answers
// go_package_api for its own module's package, a standard library package
// (GOROOT, readable as the system's) and a dependency in the daemon's
// module cache (readable: the sandbox's defaults for a Go program), with
// its build and gopls caches under its private directory, and sees the
// worktree's own code, not the other's.
func TestSandboxGopls(t *testing.T) {
	t.Parallel()
	needConfinement(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	gopls := testenv.Gopls(t)
	sum, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	// The dependency must be in the module cache, which the sandbox lets
	// gopls read; go test of this package alone does not put it there.
	dl := exec.CommandContext(ctx, "go", "mod", "download", "github.com/oklog/run")
	dl.Dir = testenv.RepoRoot(t)
	if out, err := dl.CombinedOutput(); err != nil {
		t.Fatalf("go mod download github.com/oklog/run: %v\n%s", err, out)
	}
	var sums []string
	for line := range strings.Lines(string(sum)) {
		if strings.HasPrefix(line, "github.com/oklog/run v1.2.0") {
			sums = append(sums, line)
		}
	}
	main, wt1, _ := repoWithWorktrees(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n\nrequire github.com/oklog/run v1.2.0\n",
		"go.sum": strings.Join(sums, ""),
		"greet/greet.go": `// Package greet says hello.
package greet

import (
	"strings"

	"github.com/oklog/run"
)

// Hello returns a greeting for name.
func Hello(name string) string { return "hello, " + strings.TrimSpace(name) }

// Group is a run group.
func Group() *run.Group { return new(run.Group) }
`,
	})
	testenv.WriteFiles(t, wt1, map[string]string{"greet/bye.go": "package greet\n\n// Bye says goodbye to name.\nfunc Bye(name string) string { return \"bye, \" + name }\n"})
	testenv.RunGit(t, wt1, "add", "-A")
	testenv.RunGit(t, wt1, "commit", "-q", "-m", "greet: add Bye")
	b := confinedBroker(t, map[string]map[string]any{"gopls": {
		"command": gopls, "args": []string{"mcp"}, "scope": "worktree", "sandbox": true,
		// Offline: no proxy, no toolchain downloads, no go.work from outside.
		"env":         map[string]string{"GOPROXY": "off", "GOTOOLCHAIN": "local", "GOWORK": "off", "GOTELEMETRY": "off", "GOFLAGS": "-mod=mod"},
		"callTimeout": "3m", "startTimeout": "1m",
	}})

	for _, c := range []struct {
		cwd, pkg       string
		want, dontWant []string
	}{
		{wt1, "example.com/m/greet", []string{"func Hello(name string) string", "func Bye(name string) string"}, nil},
		{main, "example.com/m/greet", []string{"func Hello(name string) string"}, []string{"Bye"}},
		{main, "strings", []string{"func Cut(s, sep string)"}, nil},
		{main, "github.com/oklog/run", []string{"func (g *Group) Add("}, nil},
	} {
		res := call(t, ctx, b, request("gopls", c.cwd), "go_package_api", map[string]any{"packagePaths": []string{c.pkg}})
		api := res.text()
		if res.IsError || api == "" {
			t.Errorf("go_package_api %s from %s: empty or error: %+v", c.pkg, c.cwd, res)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(api, w) {
				t.Errorf("go_package_api %s from %s lacks %q:\n%s", c.pkg, c.cwd, w, api)
			}
		}
		for _, w := range c.dontWant {
			if strings.Contains(api, w) {
				t.Errorf("go_package_api %s from %s mentions %q (another worktree's code):\n%s", c.pkg, c.cwd, w, api)
			}
		}
	}
	checkConfined(t, b, "gopls")
	inst := instancesOf(b, "gopls")
	if len(inst) != 2 {
		t.Errorf("gopls instances = %v, want one per worktree", slices.Collect(mapKeys(inst)))
	}
	for _, in := range inst {
		if in.TmpDir == "" {
			t.Errorf("instance %s has no private directory", in.ID)
			continue
		}
		if ents, _ := os.ReadDir(filepath.Join(in.TmpDir, ".cache")); len(ents) == 0 {
			t.Errorf("instance %s: nothing cached under its private directory %s", in.ID, in.TmpDir)
		}
	}
}

// probeFlake has two packages with no inputs: probe, the npmtest probe
// server run by node from its store path with a file of its own beside
// it, and other, a store path probe's closure does not hold.
const probeFlake = `{
  outputs = { self }: {
    packages.SYSTEM.probe = derivation {
      name = "mcp-probe-1.0"; system = "SYSTEM"; builder = "/bin/sh";
      server = builtins.readFile ./server.js;
      args = [ "-c" ''/bin/mkdir -p $out/bin $out/share && printf '%s' "$server" > $out/share/server.js && printf 'in the closure' > $out/share/data.txt && printf '#!/bin/sh\nexec NODE %s/share/server.js\n' "$out" > $out/bin/probe && /bin/chmod +x $out/bin/probe'' ];
    } // { meta.mainProgram = "probe"; };
    packages.SYSTEM.other = derivation {
      name = "mcp-other-1.0"; system = "SYSTEM"; builder = "/bin/sh";
      args = [ "-c" ''/bin/mkdir -p $out && printf 'not in the closure' > $out/secret.txt'' ];
    };
  };
}
`

// TestSandboxNixClosure: a nix: server confined reads its own store
// closure and nothing else of the store: not another package's path, not
// the store's listing. The same server unconfined reads the other path,
// so the test can fail.
func TestSandboxNixClosure(t *testing.T) {
	needConfinement(t)
	nx := testenv.Nix(t)
	node := testenv.Node(t)
	proctest.CheckNoLeaks(t)
	k := sandbox.Probe()
	w := testenv.WatchConfined(t, k.Memory.Dir, k.Pids.Dir)
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{
		"flake.nix": strings.NewReplacer("SYSTEM", nx.System, "NODE", node).Replace(probeFlake),
		"server.js": npmtest.ProbeServer,
	})
	ref := "path:" + dir
	other := nixBuild(t, nx, ref+"#other")
	b := nixBrokerConfig(t, newNixResolver(t, nx, t.TempDir(), nx.Bin), nixConfig(t,
		map[string]string{"probe": "nix:" + ref + "#probe", "open": "nix:" + ref + "#probe"},
		map[string]map[string]any{"probe": {"sandbox": true}, "open": {"sandbox": false}}, nil))

	self := callText(t, b, req("probe", ""), "self", `{}`)
	own := filepath.Dir(filepath.Dir(self)) // <store path>/share/server.js
	if !strings.HasPrefix(own, "/nix/store/") {
		t.Fatalf("the server runs from %s, not a store path", self)
	}
	if got := callText(t, b, req("probe", ""), "read", `{"path": "`+own+`/share/data.txt"}`); got != "in the closure" {
		t.Errorf("reading its own closure: %q", got)
	}
	for what, args := range map[string]string{
		"another store path": `{"path": "` + other + `/secret.txt"}`,
		"the store":          `{"path": "/nix/store"}`,
	} {
		tool := "read"
		if what == "the store" {
			tool = "list"
		}
		got, isErr := callResultText(t, b, req("probe", ""), tool, args)
		if !isErr || !strings.Contains(got, "EACCES") {
			t.Errorf("confined, %s %s: %q (error %v), want EACCES", tool, what, got, isErr)
		}
	}
	checkConfined(t, b, "probe")
	for _, in := range b.Instances() {
		if in.Sandbox != nil {
			w.Note(in.Pid)
		}
	}
	if got := callText(t, b, req("open", ""), "read", `{"path": "`+other+`/secret.txt"}`); got != "not in the closure" {
		t.Errorf("the same server unconfined reading another store path: %q; want it read, or this test cannot fail", got)
	}
}

// nixBuild builds ref and returns its output's store path.
func nixBuild(t *testing.T, nx testenv.NixSetup, ref string) string {
	t.Helper()
	cmd := exec.Command(nx.Bin, "build", "--no-link", "--json", ref)
	cmd.Env = nx.CmdEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nix build %s: %v", ref, err)
	}
	var res []struct{ Outputs map[string]string }
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 || res[0].Outputs["out"] == "" {
		t.Fatalf("nix build %s: %s", ref, out)
	}
	return res[0].Outputs["out"]
}

// callResultText is callText that returns a tool's error (isError) too.
func callResultText(t *testing.T, b *broker.Broker, r broker.Request, tool, args string) (string, bool) {
	t.Helper()
	res, err := b.CallTool(t.Context(), r, tool, json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("%s.%s: %v", r.Server, tool, err)
	}
	var out struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(res, &out); err != nil || len(out.Content) == 0 {
		t.Fatalf("result %s: %v", res, err)
	}
	return out.Content[0].Text, out.IsError
}
