package scripts_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/scripts"
)

// write creates the files (path: content) under root.
func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChainFindShadows(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"user/mcpx/scripts/report.ts":           "",
		"user/mcpx/scripts/only-user.js":        "",
		"repo/.config/mcpx/scripts/report.ts":   "",
		"repo/.mcpx/scripts/ignored.ts":         "", // .config/mcpx is preferred in one directory
		"repo/sub/.mcpx/scripts/report.mjs":     "",
		"repo/sub/.mcpx/scripts/report.js":      "", // .mjs wins within one directory
		"repo/sub/.mcpx/scripts/.hidden.ts":     "",
		"repo/sub/.mcpx/scripts/notes.txt":      "",
		"repo/sub/deeper/.keep":                 "",
		"repo/.config/mcpx/lib/util.ts":         "",
		"repo/sub/.mcpx/scripts/dir.ts/file.ts": "", // a directory named like a script is none
	})
	// The chain of repo/sub/deeper, nearest first, as package chain finds
	// it (.config/mcpx preferred over .mcpx in one directory).
	dirs := []string{filepath.Join(root, "repo/sub/.mcpx"), filepath.Join(root, "repo/.config/mcpx"), filepath.Join(root, "user/mcpx")}
	got := scripts.Find(dirs)
	want := []scripts.Script{
		{Name: "only-user", Path: filepath.Join(root, "user/mcpx/scripts/only-user.js"), Source: filepath.Join(root, "user/mcpx")},
		{Name: "report", Path: filepath.Join(root, "repo/sub/.mcpx/scripts/report.mjs"), Source: filepath.Join(root, "repo/sub/.mcpx"),
			Shadows: []string{filepath.Join(root, "repo/.config/mcpx/scripts/report.ts"), filepath.Join(root, "user/mcpx/scripts/report.ts")}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}
	if s, ok := scripts.Lookup(dirs, "report"); !ok || s.Path != want[1].Path {
		t.Errorf("Lookup(report) = %+v, %v; want %s", s, ok, want[1].Path)
	}
	if _, ok := scripts.Lookup(dirs, "ignored"); ok {
		t.Error("Lookup found a script of .mcpx beside .config/mcpx")
	}
	if diff := cmp.Diff([]string{filepath.Join(root, "repo/.config/mcpx/lib")}, scripts.LibDirs(dirs)); diff != "" {
		t.Errorf("LibDirs (-want +got):\n%s", diff)
	}
	// Outside the repository only the user's scripts are seen.
	outside := scripts.Find([]string{filepath.Join(root, "user/mcpx")})
	if len(outside) != 2 || outside[1].Path != filepath.Join(root, "user/mcpx/scripts/report.ts") || len(outside[1].Shadows) != 0 {
		t.Errorf("Find outside the repo = %+v", outside)
	}
}

func TestChooseRuntime(t *testing.T) {
	installed := func(names ...string) func(string) (string, error) {
		return func(n string) (string, error) {
			for _, have := range names {
				if n == have {
					return "/bin/" + n, nil
				}
			}
			return "", exec.ErrNotFound
		}
	}
	for _, tc := range []struct {
		name, flag, env, config string
		have                    []string
		want                    scripts.Runtime
		err                     string
	}{
		{name: "first installed: deno", have: []string{"node", "bun", "deno"}, want: scripts.Runtime{Name: "deno", Path: "/bin/deno"}},
		{name: "first installed: bun", have: []string{"node", "bun"}, want: scripts.Runtime{Name: "bun", Path: "/bin/bun"}},
		{name: "only node", have: []string{"node"}, want: scripts.Runtime{Name: "node", Path: "/bin/node"}},
		{name: "env over default", env: "node", have: []string{"node", "deno"}, want: scripts.Runtime{Name: "node", Path: "/bin/node"}},
		{name: "flag over env", flag: "bun", env: "node", have: []string{"node", "bun"}, want: scripts.Runtime{Name: "bun", Path: "/bin/bun"}},
		{name: "config over default", config: "node", have: []string{"node", "deno"}, want: scripts.Runtime{Name: "node", Path: "/bin/node"}},
		{name: "env over config", env: "bun", config: "node", have: []string{"node", "bun"}, want: scripts.Runtime{Name: "bun", Path: "/bin/bun"}},
		{name: "unknown in config", config: "ruby", err: `the client config's "runtime" "ruby" is not a runtime`},
		{name: "a path", flag: "/opt/bun/bin/bun.exe", want: scripts.Runtime{Name: "bun", Path: "/opt/bun/bin/bun.exe"}},
		{name: "not installed", flag: "deno", have: []string{"node"}, err: "--runtime deno: deno is not on PATH"},
		{name: "unknown", env: "python", err: `$MCPX_RUNTIME "python" is not a runtime: want one of deno, bun, node`},
		{name: "none", err: "no JavaScript runtime: none of deno, bun, node is on PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scripts.ChooseRuntime(tc.flag, tc.env, tc.config, installed(tc.have...))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestBundleRunsOnNode bundles a TypeScript script importing the client
// and a lib/ file and runs it on node (v20 cannot strip types: the bundle
// is plain JavaScript): the default export's value, the reported calls.
func TestBundleRunsOnNode(t *testing.T) {
	node := testenv.Node(t)
	root := t.TempDir()
	write(t, root, map[string]string{
		"client.ts": `export const demo = { echo: async (a: { message: string }): Promise<string> => {
  (globalThis as any)[Symbol.for("mcpx.call")]?.({ server: "demo", tool: "echo", ms: 1, outcome: "ok" });
  return a.message; } };
export const log = { info: (m: string): void => console.error(m), debug: (m: string): void => console.error(m) };`,
		"near/lib/fmt.ts":       `export const shout = (s: string): string => s.toUpperCase();`,
		"far/lib/fmt.ts":        `export const shout = (s: string): string => "far";`,
		"far/lib/more/index.ts": `export const n: number = 7;`,
		"script.ts": `import { demo } from "mcpx";
import { shout } from "@lib/fmt";
import { n } from "@lib/more";
export default async (args: { m: string }) => ({ said: shout(await demo.echo({ message: args.m })), n });
export const named = (args: string[]) => args.length;`,
	})
	run := func(t *testing.T, opts scripts.BundleOptions, args ...string) (string, []scripts.Call) {
		t.Helper()
		opts.Entry, opts.Client = filepath.Join(root, "script.ts"), filepath.Join(root, "client.ts")
		opts.Lib = []string{filepath.Join(root, "near/lib"), filepath.Join(root, "far/lib")}
		opts.Dir = t.TempDir()
		runner, err := scripts.Bundle(opts)
		if err != nil {
			t.Fatal(err)
		}
		reportFile := filepath.Join(opts.Dir, "calls.jsonl")
		cmd := exec.Command(node, append([]string{runner}, args...)...)
		cmd.Env = append(os.Environ(), scripts.EnvReport+"="+reportFile)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node %s: %v\n%s", runner, err, out)
		}
		calls, err := scripts.ReadCalls(reportFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return string(out), calls
	}
	out, calls := run(t, scripts.BundleOptions{Args: json.RawMessage(`{"m":"hi"}`)})
	if out != `{"said":"HI","n":7}`+"\n" {
		t.Errorf("default export printed %q", out)
	}
	if diff := cmp.Diff([]scripts.Call{{Server: "demo", Tool: "echo", Ms: 1, Outcome: "ok"}}, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if out, _ := run(t, scripts.BundleOptions{Export: "named"}, "a", "b", "c"); out != "3\n" {
		t.Errorf("--export named with three positional args printed %q", out)
	}
}

func TestBundleErrorsNameTheFile(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"client.ts": "export const x = 1;",
		"bad.ts":    "import { y } from \"@lib/missing\";\nexport default () => y;",
	})
	_, err := scripts.Bundle(scripts.BundleOptions{Entry: filepath.Join(root, "bad.ts"), Client: filepath.Join(root, "client.ts"), Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "bad.ts:1:") || !strings.Contains(err.Error(), "no lib/ directory on the config chain") {
		t.Errorf("err = %v, want the file, line and the missing lib/", err)
	}
}

// TestResolve: a path (with a slash, or a script extension) is a file,
// relative to the cwd; a bare name is the nearest named script; what is not
// found is said, with the names there are.
func TestResolve(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"near/scripts/report.ts":      "",
		"far/scripts/report.ts":       "",
		"far/scripts/other.js":        "",
		"cwd/local.ts":                "",
		"cwd/hello.sh":                "",
		"cwd/sub/x.mjs":               "",
		"far/scripts/demo/fetch.ts":   "",
		"near/scripts/demo/fetch.js":  "",
		"far/scripts/demo/.hidden.ts": "",
		"far/scripts/demo/deep/no.ts": "",
	})
	dirs := []string{filepath.Join(root, "near"), filepath.Join(root, "far")}
	cwd := filepath.Join(root, "cwd")
	for _, tc := range []struct{ arg, want, err string }{
		{"report", filepath.Join(root, "near/scripts/report.ts"), ""},
		{"demo:fetch", filepath.Join(root, "near/scripts/demo/fetch.js"), ""}, // a recipe, the nearest
		{"demo:deep", "", "no script named \"demo:deep\"; the scripts here: demo:fetch, other, report"},
		{"other", filepath.Join(root, "far/scripts/other.js"), ""},
		{"local.ts", filepath.Join(cwd, "local.ts"), ""},
		{"hello.sh", filepath.Join(cwd, "hello.sh"), ""},
		{"gone.sh", "", "no script named \"gone.sh\"; the scripts here: demo:fetch, other, report"},
		{"sub/x.mjs", filepath.Join(cwd, "sub/x.mjs"), ""},
		{filepath.Join(cwd, "local.ts"), filepath.Join(cwd, "local.ts"), ""},
		{"sub", "", "no script named \"sub\"; the scripts here: demo:fetch, other, report"},
		{"./sub", "", "no script file ./sub"},
		{"gone.ts", "", "no script file gone.ts"},
	} {
		got, err := scripts.Resolve(dirs, cwd, tc.arg)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("Resolve(%q) = %q, %v; want %q, %q", tc.arg, got, err, tc.want, tc.err)
		}
	}
	if s, ok := scripts.Lookup(dirs, "demo:fetch"); !ok || s.Server != "demo" || len(s.Shadows) != 1 || s.Shadows[0] != filepath.Join(root, "far/scripts/demo/fetch.ts") {
		t.Errorf("Lookup(demo:fetch) = %+v, %v; want the near recipe of server demo, shadowing the far one", s, ok)
	}
	if _, err := scripts.Resolve(nil, cwd, "report"); err == nil || !strings.Contains(err.Error(), "no scripts/ directory on the config chain") {
		t.Errorf("Resolve with no scripts anywhere: %v", err)
	}
}

// TestBundleStackNamesTheScript: an error thrown in a script, in its
// default export or at its top level, points at the script's own .ts file
// and line, not the bundle's, on each runtime as Runtime.Args runs it
// (real-use 36) — with prefix and suffix lines in its module too (issue
// 35), and a thrown prefix line names its own line of script.prefix.
func TestBundleStackNamesTheScript(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"client.ts": "export const demo = { ok: (): boolean => true };\nexport const log = { info: console.error, debug: console.error };",
		"script.ts": `import { demo } from "mcpx";
type Args = { n: number };
export default (args: Args): number => {
  if (demo.ok()) throw new Error("boom " + args.n);
  return args.n;
};`,
		"top.ts": `type T = { n: number };
const t: T = { n: 2 };
if (t.n > 1) throw new Error("boom " + t.n);
export default (): number => t.n;`,
	})
	node := testenv.Node(t)
	runtimes := map[string][]string{ // the command line before the runtime's own arguments
		"node": {node},
		"deno": {node, testenv.NPMPackageBin(t, "deno")},
		"bun":  {testenv.NPMPackageBinNamed(t, "bun", "bun")},
	}
	prefix := []string{`import { demo as d2 } from "mcpx";`, "const two = 2;\nconst three = 3;", "void [d2, two, three];"}
	for script, line := range map[string]string{"script.ts": "4", "top.ts": "3", "script.ts+prefix": "4", "top.ts+prefix": "3", "top.ts+badprefix": "3"} {
		script, lines, _ := strings.Cut(script, "+")
		opts := scripts.BundleOptions{Entry: filepath.Join(root, script), Client: filepath.Join(root, "client.ts"),
			Dir: t.TempDir(), Args: json.RawMessage(`{"n":1}`)}
		want := filepath.Join(root, script) + ":" + line + ":"
		switch lines {
		case "prefix":
			opts.Prefix, opts.Suffix = prefix, []string{"void result;", `import { log as l2 } from "mcpx";`, "void l2;"}
			script += " with prefix"
		case "badprefix":
			opts.Prefix = append(slices.Clone(prefix), `throw new Error("boom prefix");`)
			want = "mcpx:script.prefix:5:"
			script += " with a throwing prefix"
		}
		runner, err := scripts.Bundle(opts)
		if err != nil {
			t.Fatal(err)
		}
		for name, prefix := range runtimes {
			t.Run(script+"/"+name, func(t *testing.T) {
				proctest.CheckNoLeaks(t)
				rt := scripts.Runtime{Name: name, Path: prefix[len(prefix)-1]}
				argv := append(slices.Clone(prefix), rt.Args(runner, nil)...)
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = append(append(os.Environ(), rt.Env()...), proctest.Env(t))
				out, err := cmd.CombinedOutput()
				if err == nil {
					t.Fatalf("the script that throws succeeded:\n%s", out)
				}
				if !strings.Contains(string(out), "boom ") || !strings.Contains(string(out), want) {
					t.Errorf("the stack does not name %s:\n%s", want, out)
				}
			})
		}
	}
}

// TestBundleLinesShareTheModule: prefix and suffix lines are one module
// with the script (issue 35): a prefix line's const and import are a
// snippet's to use, the suffix sees them and the result, a snippet's own
// declarations shadow the client's names, and a stack names the snippet's
// own line, on node.
func TestBundleLinesShareTheModule(t *testing.T) {
	node := testenv.Node(t)
	root := t.TempDir()
	write(t, root, map[string]string{
		"client.ts": "export const demo = { n: (): number => 1 };\nexport const log = { info: console.error, debug: console.error };",
		"lib/h.ts":  `export const h = (s: string): string => "h:" + s;`,
	})
	for _, tc := range []struct{ snippet, out, stderr string }{
		{"return X + 1", "6\n", "S 5 6\n"},
		{"h(String(X + demo.n()))", "\"h:6\"\n", "S 5 h:6\n"},
		{"const demo = 2;\nreturn demo + X", "7\n", "S 5 7\n"},
		{"const x = X;\nthrow new Error(`nope ${x}`);", "", "exec.ts:2:"},
	} {
		dir := t.TempDir()
		mod, err := scripts.ExecModule(tc.snippet, filepath.Join(root, "client.ts"), false)
		if err != nil {
			t.Fatal(err)
		}
		runner, err := scripts.Bundle(scripts.BundleOptions{Entry: scripts.ExecName, Source: mod, SourceDir: root, Preamble: scripts.ExecPreamble,
			Client: filepath.Join(root, "client.ts"), Lib: []string{filepath.Join(root, "lib")}, Dir: dir,
			Prefix: []string{`import { h } from "@lib/h.ts";`, "const X = 5;"},
			Suffix: []string{`process.stderr.write("S " + X + " " + result.value + "\n");`}})
		if err != nil {
			t.Fatalf("%q: %v", tc.snippet, err)
		}
		cmd := exec.Command(node, "--enable-source-maps", runner)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		if stdout.String() != tc.out || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%q printed %q, stderr %q; want %q and %q in stderr", tc.snippet, stdout.String(), stderr.String(), tc.out, tc.stderr)
		}
	}
}
