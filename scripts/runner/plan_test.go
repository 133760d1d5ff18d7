package runner_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/config/chain"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/scripts"
	"mcpx.dev/mcpx/scripts/runner"
)

// planTree is a config chain of three project directories under a
// ceiling: far (the tree's root), near (sub) and deeper (sub/deeper),
// whose config others may write.
type planTree struct {
	far, near, deeper string // the directories
	nearConfig        string
	deeperConfig      string
}

func newPlanTree(t *testing.T, files map[string]string) planTree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "tree")
	all := map[string]string{
		".mcpx/config.json": `{"script": {"prefix": ["far()"], "suffix": ["farEnd()"], "interpreter": {".py": "python3 -u"},
			"env": {"A": "far", "B": "far"}, "deps": {"packages": {"is-odd": "3.0.1"}}, "environment": "host"}}`,
		"sub/.mcpx/config.json":        `{"script": {"prefix": [null, "near()"], "interpreter": {".rb": "ruby"}, "env": {"A": "near"}, "environment": "auto"}}`,
		"sub/deeper/.mcpx/config.json": `{"script": {"prefix": ["evil()"], "env": {"A": "evil"}}}`,
	}
	for k, v := range files {
		all[k] = v
	}
	testenv.WriteFiles(t, root, all)
	tr := planTree{far: root, near: filepath.Join(root, "sub"), deeper: filepath.Join(root, "sub", "deeper"),
		nearConfig: filepath.Join(root, "sub", ".mcpx", "config.json"), deeperConfig: filepath.Join(root, "sub", "deeper", ".mcpx", "config.json")}
	if err := os.Chmod(tr.deeperConfig, 0o664); err != nil {
		t.Fatal(err)
	}
	return tr
}

// chainOf is the config chain of dir, stopping at the tree's base.
func (tr planTree) chainOf(t *testing.T, dir string) chain.Chain {
	t.Helper()
	ch, warns := chain.Find(dir, chain.Options{CeilingDirs: []string{filepath.Dir(tr.far)}})
	if len(warns) > 0 {
		t.Fatalf("chain warnings: %v", warns)
	}
	return ch
}

func line(s string) *string { return &s }

// TestLoadSettings: the chain's script blocks merge nearest first under
// the command line's layer (lines replace or splice what they inherit,
// maps win per key); a config others may write is left out, and warned
// of; one that does not load is an error naming it.
func TestLoadSettings(t *testing.T) {
	tr := newPlanTree(t, nil)
	var warned []string
	warn := func(file string, err error) {
		var ue *config.UntrustedError
		if !errors.As(err, &ue) {
			t.Errorf("warned of %s with %v, want an UntrustedError", file, err)
		}
		warned = append(warned, file)
	}
	set, err := runner.LoadSettings(tr.chainOf(t, tr.deeper), nil, config.Lines{line("cli()")}, map[string]string{"B": "cli"}, warn)
	if err != nil {
		t.Fatal(err)
	}
	want := runner.Settings{
		Prefix:           []string{"far()", "near()"},
		Suffix:           []string{"cli()"},
		Interpreter:      map[string]string{".py": "python3 -u", ".rb": "ruby"},
		InterpreterFiles: map[string]string{".py": filepath.Join(tr.far, ".mcpx", "config.json"), ".rb": tr.nearConfig},
		Env:              map[string]string{"A": "near", "B": "cli"},
		Deps:             config.ScriptDeps{Packages: map[string]string{"is-odd": "3.0.1"}},
		ConfigDirs:       []string{filepath.Dir(tr.nearConfig), filepath.Join(tr.far, ".mcpx")},
		Environment:      "auto",
		EnvironmentDir:   filepath.Dir(tr.nearConfig),
	}
	if got, _ := json.Marshal(set); string(got) != string(must(json.Marshal(want))) {
		t.Errorf("settings from %s:\n got %s\nwant %s", tr.deeper, got, must(json.Marshal(want)))
	}
	if !slices.Equal(warned, []string{tr.deeperConfig}) {
		t.Errorf("warned of %v, want the group-writable %s", warned, tr.deeperConfig)
	}

	testenv.WriteFile(t, tr.nearConfig, `{"script": {"prefix": "not a list"}}`)
	if _, err := runner.LoadSettings(tr.chainOf(t, tr.near), nil, nil, nil, nil); err == nil || !strings.Contains(err.Error(), tr.nearConfig) || !strings.Contains(err.Error(), "prefix") {
		t.Errorf("a script block that does not load: %v, want an error naming the file and field", err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// fakeRuntimes finds every runtime in /opt/<name>/bin: the plan only names
// the binary, it never runs it.
func fakeRuntimes(name string) (string, error) { return "/opt/" + name + "/bin/" + name, nil }

// TestPlan: a named script is found on the chain and runs on the runtime
// chosen by flag, then $MCPX_RUNTIME, then the client config, with the
// chain's lines, variables and packages; one of an interpreter's
// extension runs on it, with no lines and no packages, and refuses the
// JavaScript options, as --minimal does; a snippet is not looked up; the
// relay is needed by an interpreter's script and a script whose client
// cannot find the broker by the default record.
func TestPlan(t *testing.T) {
	tr := newPlanTree(t, map[string]string{
		"sub/.mcpx/scripts/report.ts": "export default () => 1;\n",
		"sub/tally.py":                "print(1)\n",
	})
	state := t.TempDir()
	ch := tr.chainOf(t, tr.near)
	env := map[string]string{}
	opts := func(o runner.PlanOptions) runner.PlanOptions {
		o.Cwd, o.Chain, o.State, o.LookPath = tr.near, ch, state, fakeRuntimes
		o.Getenv = func(k string) string { return env[k] }
		return o
	}

	p, err := runner.NewPlan(opts(runner.PlanOptions{Script: "report", ClientRuntime: "deno", Env: map[string]string{"C": "cli"}}))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Script
	if s.Path != filepath.Join(tr.near, ".mcpx", "scripts", "report.ts") || s.Interpreter != nil || s.Runtime != (scripts.Runtime{Name: "deno", Path: "/opt/deno/bin/deno"}) {
		t.Errorf("report planned as %s on %+v (interpreter %v), want the chain's report.ts on the client config's deno", s.Path, s.Runtime, s.Interpreter)
	}
	if !slices.Equal(s.Prefix, []string{"far()", "near()"}) || !slices.Equal(s.Suffix, []string{"farEnd()"}) ||
		!slices.Equal(s.Env, []string{"A=near", "B=far", "C=cli"}) || s.Cache != filepath.Join(state, "run") {
		t.Errorf("report's prefix %q, suffix %q, env %q, cache %s", s.Prefix, s.Suffix, s.Env, s.Cache)
	}
	if d := s.Deps; d == nil || d.Packages["is-odd"] != "3.0.1" || d.Cache != filepath.Join(state, "deps") ||
		!slices.Equal(d.ConfigManifests, []string{filepath.Join(tr.near, ".mcpx", "package.json"), filepath.Join(tr.far, ".mcpx", "package.json")}) {
		t.Errorf("report's deps %+v, want the chain's packages, cached in the state directory, and its manifests", d)
	}
	if p.Relay(true) || !p.Relay(false) {
		t.Errorf("a JavaScript script's relay: %v with the default record, %v without; want false, true", p.Relay(true), p.Relay(false))
	}

	env["MCPX_RUNTIME"] = "bun"
	if p, err := runner.NewPlan(opts(runner.PlanOptions{Script: "report", ClientRuntime: "deno"})); err != nil || p.Script.Runtime.Name != "bun" {
		t.Errorf("with $MCPX_RUNTIME=bun: %+v, %v; want bun over the client config's deno", p, err)
	}
	if p, err := runner.NewPlan(opts(runner.PlanOptions{Script: "report", Runtime: "node", ClientRuntime: "deno"})); err != nil || p.Script.Runtime.Name != "node" {
		t.Errorf("with --runtime node: %+v, %v; want node over all", p, err)
	}
	if p, err := runner.NewPlan(opts(runner.PlanOptions{Script: "report", Minimal: true})); err != nil || p.Script.Prefix != nil || p.Script.Suffix != nil || !p.Script.Minimal {
		t.Errorf("--minimal: %+v, %v; want no lines", p, err)
	}

	p, err = runner.NewPlan(opts(runner.PlanOptions{Script: "./tally.py"}))
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Script; !slices.Equal(s.Interpreter, []string{"python3", "-u"}) || s.Runtime != (scripts.Runtime{}) || s.Deps != nil || s.Prefix != nil || s.Suffix != nil {
		t.Errorf("tally.py planned as %+v, want the chain's python3 -u, no runtime, packages or lines", s)
	}
	if !p.Relay(true) {
		t.Error("an interpreter's script without the relay: it reaches the broker over HTTP itself")
	}
	for _, tc := range []struct {
		o    runner.PlanOptions
		want string
	}{
		{runner.PlanOptions{Script: "./tally.py", Export: "main"}, "./tally.py runs on python3 -u, not a JavaScript runtime: it takes no --export"},
		{runner.PlanOptions{Script: "./tally.py", Prefix: config.Lines{line("x()")}}, "not a JavaScript runtime"},
		{runner.PlanOptions{Script: "report", Minimal: true, Args: json.RawMessage(`[1]`)}, "--minimal runs the module alone: it takes no --export, --json-args"},
		{runner.PlanOptions{Script: "nosuch"}, "nosuch"},
		{runner.PlanOptions{Script: "report", Runtime: "python"}, `--runtime "python" is not a runtime`},
	} {
		if _, err := runner.NewPlan(opts(tc.o)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("plan %+v: %v, want an error saying %q", tc.o, err, tc.want)
		}
	}

	p, err = runner.NewPlan(opts(runner.PlanOptions{Snippet: "return 1", Script: "nosuch"}))
	if err != nil || p.Script.Path != scripts.ExecName || p.Script.Snippet != "return 1" || p.Script.Interpreter != nil {
		t.Errorf("a snippet: %+v, %v; want it run as %s on a runtime, nothing looked up", p, err, scripts.ExecName)
	}
}

// shellNix is a shell.nix whose shell sets a variable and a PATH of its
// own (nothing is built: the builder only writes $out).
const shellNix = `derivation {
  name = "mcpx-plan-shell"; system = builtins.currentSystem; builder = "/bin/bash"; outputs = [ "out" ];
  MCPX_SHELL_VAR = "shell-value"; PATH = "/opt/shelltools/bin"; args = [ "-c" "echo > $out" ];
}
`

// TestPlanEnvironment: script.environment "auto" is the run directory's
// shell.nix, captured by real nix into the state directory, its PATH
// before the caller's; with no shell.nix (or flake.nix) there, and for
// "host", the caller's environment is left as it is.
func TestPlanEnvironment(t *testing.T) {
	proctest.CheckNoLeaks(t)
	nx := testenv.Nix(t)
	for _, kv := range nx.CmdEnv() {
		if k, v, _ := strings.Cut(kv, "="); k == "NIX_CONFIG" || k == "XDG_CACHE_HOME" {
			t.Setenv(k, v)
		}
	}
	tr := newPlanTree(t, map[string]string{"sub/shell.nix": shellNix})
	state := t.TempDir()
	getenv := func(k string) string {
		if k == "PATH" {
			return "/caller/bin"
		}
		return ""
	}
	p, err := runner.NewPlan(runner.PlanOptions{Snippet: "return 1", Cwd: tr.near, Chain: tr.chainOf(t, tr.near), State: state, Getenv: getenv, LookPath: fakeRuntimes})
	if err != nil {
		t.Fatal(err)
	}
	vars, err := p.Environment(t.Context(), tr.near)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(vars, "MCPX_SHELL_VAR=shell-value") || !slices.Contains(vars, "PATH=/opt/shelltools/bin:/caller/bin") {
		t.Errorf("the shell.nix's environment: %q, want its variable and its PATH before the caller's", vars)
	}
	if _, err := os.Stat(filepath.Join(state, "script-env")); err != nil {
		t.Errorf("the capture is not kept in the state directory: %v", err)
	}
	if vars, err := p.Environment(t.Context(), tr.far); err != nil || vars != nil {
		t.Errorf(`"auto" where there is no shell.nix: %q, %v; want the host's, nothing added`, vars, err)
	}
	p, err = runner.NewPlan(runner.PlanOptions{Snippet: "return 1", Cwd: tr.far, Chain: tr.chainOf(t, tr.far), State: state, Getenv: getenv, LookPath: fakeRuntimes})
	if err != nil {
		t.Fatal(err)
	}
	if vars, err := p.Environment(t.Context(), tr.near); err != nil || vars != nil || p.Settings.Environment != "host" {
		t.Errorf(`"host": %q, %v; want nothing added`, vars, err)
	}
}

// runtimeFlake is a flake (no inputs) whose package "bun" is a program
// named bun: a nix: runtime is the program nix builds.
const runtimeFlake = `{
  outputs = { self }: {
    packages.x86_64-linux.bun = derivation {
      name = "bun"; system = "x86_64-linux"; builder = "/bin/sh";
      args = [ "-c" "/bin/mkdir -p $out/bin && echo '#!/bin/sh' > $out/bin/bun && /bin/chmod +x $out/bin/bun" ];
    };
  };
}
`

// TestPlanRuntime: the chain's script.runtime (nearest wins) is chosen
// after --runtime and $MCPX_RUNTIME, before the client config's;
// $MCPX_SCRIPT_RUNTIME, the original's name, is $MCPX_RUNTIME's alias
// (issue 35), which wins when both are set, and the plan says so; a nix:
// spec is built by real nix (a relative path ref is the config file's
// directory's) and runs the program it builds.
func TestPlanRuntime(t *testing.T) {
	proctest.CheckNoLeaks(t)
	tr := newPlanTree(t, map[string]string{
		"sub/.mcpx/config.json": `{"script": {"runtime": "node"}}`,
		".mcpx/config.json":     `{"script": {"runtime": "deno"}}`,
		"sub/rt/flake.nix":      runtimeFlake,
	})
	state := t.TempDir()
	env := map[string]string{}
	var notes []string
	opts := func(o runner.PlanOptions) runner.PlanOptions {
		o.Snippet, o.Cwd, o.Chain, o.State, o.LookPath = "return 1", tr.near, tr.chainOf(t, tr.near), state, fakeRuntimes
		o.Getenv = func(k string) string { return env[k] }
		o.Note = func(msg string) { notes = append(notes, msg) }
		return o
	}
	for _, tc := range []struct {
		flag, env, alias, want string
	}{
		{want: "node"}, // the nearest script.runtime over the client config's bun
		{alias: "deno", want: "deno"},
		{env: "bun", want: "bun"},
		{env: "bun", alias: "deno", want: "bun"},
		{flag: "deno", env: "bun", want: "deno"},
	} {
		env["MCPX_RUNTIME"], env["MCPX_SCRIPT_RUNTIME"], notes = tc.env, tc.alias, nil
		p, err := runner.NewPlan(opts(runner.PlanOptions{Runtime: tc.flag, ClientRuntime: "bun"}))
		if err != nil || p.Script.Runtime != (scripts.Runtime{Name: tc.want, Path: "/opt/" + tc.want + "/bin/" + tc.want}) {
			t.Errorf("%+v: %+v, %v; want %s", tc, p, err, tc.want)
		}
		if wantNote := tc.env != "" && tc.alias != "" && tc.flag == ""; wantNote != (len(notes) == 1) ||
			wantNote && notes[0] != `$MCPX_RUNTIME "bun" wins over $MCPX_SCRIPT_RUNTIME "deno"` {
			t.Errorf("%+v: notes %q", tc, notes)
		}
	}
	env["MCPX_RUNTIME"], env["MCPX_SCRIPT_RUNTIME"] = "", "python"
	if _, err := runner.NewPlan(opts(runner.PlanOptions{})); err == nil || !strings.Contains(err.Error(), `$MCPX_SCRIPT_RUNTIME "python" is not a runtime`) {
		t.Errorf("$MCPX_SCRIPT_RUNTIME=python: %v, want it named", err)
	}
	env["MCPX_SCRIPT_RUNTIME"] = ""

	nx := testenv.Nix(t)
	for _, kv := range nx.CmdEnv() {
		if k, v, _ := strings.Cut(kv, "="); k == "NIX_CONFIG" || k == "XDG_CACHE_HOME" {
			t.Setenv(k, v)
		}
	}
	testenv.WriteFiles(t, tr.near, map[string]string{".mcpx/config.json": `{"script": {"runtime": "nix:path:../rt#bun"}}`})
	p, err := runner.NewPlan(opts(runner.PlanOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if rt := p.Script.Runtime; rt.Name != "bun" || !strings.HasPrefix(rt.Path, "/nix/store/") || !strings.HasSuffix(rt.Path, "/bin/bun") {
		t.Errorf("script.runtime nix:path:../rt#bun: %+v, want bun built by nix", rt)
	}
	// "isolated" holds the nix: runtime's package, and the PATH is its
	// environment's alone.
	testenv.WriteFiles(t, tr.near, map[string]string{".mcpx/config.json": `{"script": {"runtime": "nix:path:../rt#bun", "environment": "isolated"}}`})
	env["PATH"] = "/usr/bin:/bin"
	if p, err = runner.NewPlan(opts(runner.PlanOptions{})); err != nil {
		t.Fatal(err)
	}
	vars, err := p.Environment(t.Context(), tr.near)
	if err != nil || len(vars) != 1 || !strings.HasPrefix(vars[0], "PATH=/nix/store/") || strings.Contains(vars[0], ":/usr/bin") {
		t.Fatalf("isolated with a nix: runtime: %q, %v; want its environment's PATH alone", vars, err)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimPrefix(vars[0], "PATH="), "bun")); err != nil {
		t.Errorf("the isolated environment lacks the runtime: %v", err)
	}
	testenv.WriteFiles(t, tr.near, map[string]string{".mcpx/config.json": `{"script": {"runtime": "nix:path:../rt#nosuch"}}`})
	if _, err := runner.NewPlan(opts(runner.PlanOptions{})); err == nil || !strings.Contains(err.Error(), "script.runtime ("+tr.nearConfig+")") ||
		!strings.Contains(err.Error(), "nosuch") {
		t.Errorf("a nix: runtime nix cannot build: %v, want an error naming the setting and the spec", err)
	}
}

// interpFlake is a flake (no inputs) whose package "lua" is a program
// that names the script it is given: a stand-in interpreter nix builds.
const interpFlake = `{
  outputs = { self }: {
    packages.x86_64-linux.lua = derivation {
      name = "lua"; system = "x86_64-linux"; builder = "/bin/sh";
      args = [ "-c" "/bin/mkdir -p $out/bin && printf '#!/bin/sh\\necho interpreted \"$@\"\\n' > $out/bin/lua && /bin/chmod +x $out/bin/lua" ];
    };
  };
}
`

// TestPlanNixInterpreter: a script.interpreter whose command is a nix:
// spec runs the program nix builds (a relative path ref is the config
// file's directory's), with the arguments written after it; a spec that
// fails is an error naming the setting, its file and nix's message.
func TestPlanNixInterpreter(t *testing.T) {
	proctest.CheckNoLeaks(t)
	nx := testenv.Nix(t)
	for _, kv := range nx.CmdEnv() {
		if k, v, _ := strings.Cut(kv, "="); k == "NIX_CONFIG" || k == "XDG_CACHE_HOME" {
			t.Setenv(k, v)
		}
	}
	tr := newPlanTree(t, map[string]string{
		"sub/.mcpx/config.json": `{"script": {"interpreter": {".lua": "nix:path:../ip#lua -x"}}}`,
		"sub/ip/flake.nix":      interpFlake,
		"sub/hello.lua":         "print('hi')\n",
	})
	state := t.TempDir()
	opts := runner.PlanOptions{Script: "./hello.lua", Cwd: tr.near, Chain: tr.chainOf(t, tr.near), State: state, LookPath: fakeRuntimes,
		Getenv: func(string) string { return "" }}
	p, err := runner.NewPlan(opts)
	if err != nil {
		t.Fatal(err)
	}
	in := p.Script.Interpreter
	if len(in) != 2 || !strings.HasPrefix(in[0], "/nix/store/") || !strings.HasSuffix(in[0], "/bin/lua") || in[1] != "-x" {
		t.Fatalf("interpreter %q, want the store path nix built, then -x", in)
	}
	out, err := exec.Command(in[0], in[1], p.Script.Path).Output()
	if err != nil || string(out) != "interpreted -x "+p.Script.Path+"\n" {
		t.Errorf("the built interpreter printed %q, %v", out, err)
	}
	testenv.WriteFiles(t, tr.near, map[string]string{".mcpx/config.json": `{"script": {"interpreter": {".lua": "nix:path:../ip#nosuch"}}}`})
	_, err = runner.NewPlan(opts)
	if err == nil || !strings.Contains(err.Error(), `script.interpreter[".lua"] (`+tr.nearConfig+")") || !strings.Contains(err.Error(), "does not provide attribute") {
		t.Errorf("a spec that fails: %v, want the setting, its file and nix's message", err)
	}
}
