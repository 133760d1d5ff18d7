package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"mcpx.dev/mcpx/internal/testing/jsrtest"
	"mcpx.dev/mcpx/internal/testing/npmtest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// depsPackages are what the tests' registry serves: tiny packages of no
// dependencies.
var depsPackages = []npmtest.Package{
	{Name: "mcpx-odd", Version: "1.0.0", Files: map[string]string{"index.js": `module.exports = (n) => n % 2 === 1;`}},
	{Name: "mcpx-odd", Version: "2.0.0", Files: map[string]string{"index.js": `module.exports = (n) => "v2:" + (n % 2 === 1);`}},
	// shout requires a builtin, as CommonJS packages do.
	{Name: "@mcpx/shout", Version: "1.2.0", Files: map[string]string{"index.js": `const path = require("path"); exports.shout = (s) => path.basename("/x/" + s).toUpperCase();`}},
}

// jsrPackages are what the tests' JSR registry serves, to deno.
var jsrPackages = []jsrtest.Package{
	{Scope: "mcpxtest", Name: "greet", Version: "1.0.0", Files: map[string]string{
		"mod.ts":   `import { punct } from "./punct.ts"; export function greet(s: string): string { return "hello, " + s + punct; }`,
		"punct.ts": `export const punct = "!";`,
	}},
}

// TestRunDeps runs testdata/rundeps/*.txtar on each runtime (as TestRun)
// with npm's registry a loopback one of depsPackages and deno's JSR
// registry ($JSR_URL) one of jsrPackages, both fresh per script, and npm's
// cache the script's own (deno's is under the script's $HOME). Extra
// command and condition:
//
//	fetches pkg n    the npm registry has served pkg's packument n times;
//	                 for jsr:@scope/name, the JSR registry its meta.json
//	[deno]           the runtime is deno (so [bun], [node])
func TestRunDeps(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	testenv.Program(t, "npm", "apt-get install npm")
	runOnRuntimes(t, filepath.Join("testdata", "rundeps"), func(t *testing.T, rt scriptRuntime, e *testscript.Env) {
		reg := npmtest.Start(t, depsPackages...) // each script's own: they run in parallel
		e.Values[registryKey{}] = reg
		e.Setenv("npm_config_registry", reg.URL)
		e.Setenv("npm_config_cache", filepath.Join(e.WorkDir, "npm-cache"))
		e.Setenv("REGISTRY", reg.URL)
		jsr := jsrtest.Start(t, jsrPackages...)
		e.Values[jsrRegistryKey{}] = jsr
		e.Setenv("JSR_URL", jsr.URL)
	}, func(rt scriptRuntime, p *testscript.Params) {
		p.Condition = func(cond string) (bool, error) { return cond == rt.name, nil }
		p.Cmds["fetches"] = func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 2 {
				ts.Fatalf("usage: fetches pkg n")
			}
			n, err := strconv.Atoi(args[1])
			ts.Check(err)
			got := 0
			if pkg, ok := strings.CutPrefix(args[0], "jsr:"); ok {
				got = ts.Value(jsrRegistryKey{}).(*jsrtest.Registry).Fetches(pkg)
			} else {
				got = ts.Value(registryKey{}).(*npmtest.Registry).Fetches(args[0])
			}
			if got != n {
				ts.Fatalf("the registry served %s %d times, want %d", args[0], got, n)
			}
		}
	})
}

type (
	registryKey    struct{}
	jsrRegistryKey struct{}
)

// runOnRuntimes runs the scripts of dir on each runtime as TestRun does,
// with setup after each script's own Setup and more applied to the
// parameters (nil: none).
func runOnRuntimes(t *testing.T, dir string, setup func(*testing.T, scriptRuntime, *testscript.Env), more func(scriptRuntime, *testscript.Params)) {
	proctest.CheckNoLeaks(t)
	marker := proctest.Env(t)
	for _, rt := range scriptRuntimes(t) {
		t.Run(rt.name, func(t *testing.T) {
			p := runParams(dir, rt, marker)
			own := p.Setup
			p.Setup = func(e *testscript.Env) error {
				if err := own(e); err != nil {
					return err
				}
				setup(t, rt, e) // after: it may read what own set ($PATH)
				return nil
			}
			if more != nil {
				more(rt, &p)
			}
			testscript.Run(t, p)
		})
	}
}
