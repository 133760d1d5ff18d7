package scripts_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/npmtest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/scripts"
)

// testPackages are the registry's packages: two tiny ones of no
// dependencies, odd in two versions.
var testPackages = []npmtest.Package{
	{Name: "mcpx-odd", Version: "1.0.0", Files: map[string]string{"index.js": `module.exports = (n) => n % 2 === 1;`}},
	{Name: "mcpx-odd", Version: "2.0.0", Files: map[string]string{"index.js": `module.exports = (n) => "v2:" + (n % 2 === 1);`}},
	{Name: "@mcpx/shout", Version: "1.2.0", Files: map[string]string{"index.js": `exports.shout = (s) => s.toUpperCase();`, "more.js": `module.exports = require("path").basename("/x/more");`}},
}

// depsSetup checks the test leaks no process, needs npm on PATH and makes
// its cache the test's own (so an install fetches), and starts the
// registry; it returns node, the registry and a directory holding a
// client module.
func depsSetup(t *testing.T) (node string, reg *npmtest.Registry, root string) {
	proctest.CheckNoLeaks(t)
	testenv.Program(t, "npm", "apt-get install npm")
	t.Setenv("npm_config_cache", t.TempDir())
	root = t.TempDir()
	write(t, root, map[string]string{"client.ts": `export const x = 1;`})
	return testenv.Node(t), npmtest.Start(t, testPackages...), root
}

// bundleRun bundles root/script.ts with deps and runs it on node,
// returning its stdout, or the bundle's error.
func bundleRun(t *testing.T, node, root string, deps *scripts.Deps) (string, error) {
	t.Helper()
	runner, err := scripts.Bundle(scripts.BundleOptions{Entry: filepath.Join(root, "script.ts"), Client: filepath.Join(root, "client.ts"),
		Dir: t.TempDir(), Minimal: true, Deps: deps})
	if err != nil {
		return "", err
	}
	out, err := exec.Command(node, runner).CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", runner, err, out)
	}
	return string(out), nil
}

// TestDepsSpecifiersInstalledOnce: npm: specifiers (scoped, with a
// subpath) are installed as one set on first use and reused by the next
// bundle with no npm run; another set is another directory.
func TestDepsSpecifiersInstalledOnce(t *testing.T) {
	node, reg, root := depsSetup(t)
	write(t, root, map[string]string{
		"script.ts": `import odd from "npm:mcpx-odd@1.0.0"; import { shout } from "npm:@mcpx/shout@^1"; import more from "npm:@mcpx/shout@^1/more.js";
console.log(odd(3), shout("hi"), more);`,
	})
	var log bytes.Buffer
	deps := &scripts.Deps{Registry: reg.URL, Cache: filepath.Join(root, "deps"), Log: &log}
	for i := range 2 {
		out, err := bundleRun(t, node, root, deps)
		if err != nil {
			t.Fatal(err)
		}
		if out != "true HI more\n" {
			t.Errorf("run %d printed %q", i, out)
		}
	}
	if n := strings.Count(log.String(), "installing npm packages @mcpx/shout@^1 mcpx-odd@1.0.0 "); n != 1 {
		t.Errorf("installs logged %d times, want once:\n%s", n, log.String())
	}
	if reg.Fetches("mcpx-odd") != 1 || reg.Fetches("@mcpx/shout") != 1 {
		t.Errorf("registry fetched mcpx-odd %d and @mcpx/shout %d times, want once each", reg.Fetches("mcpx-odd"), reg.Fetches("@mcpx/shout"))
	}
	write(t, root, map[string]string{"script.ts": `import odd from "npm:mcpx-odd@2"; console.log(odd(3));`})
	if out, err := bundleRun(t, node, root, deps); err != nil || out != "v2:true\n" {
		t.Errorf("another set: %q, %v", out, err)
	}
	sets, _ := filepath.Glob(filepath.Join(root, "deps", "*", ".mcpx-deps.json"))
	if len(sets) != 2 {
		t.Errorf("the cache holds %d sets, want 2: %v", len(sets), sets)
	}
}

// TestDepsManifest: the nearest package.json's dependency (and deno.json's
// npm: import, under its alias) is installed when node_modules on disk have
// not got it; with "host" left out of script.deps.from, an undeclared
// package on disk is refused by name.
func TestDepsManifest(t *testing.T) {
	node, reg, root := depsSetup(t)
	write(t, root, map[string]string{
		"package.json":                         `{"dependencies": {"mcpx-odd": "1.0.0"}}`,
		"sub/deno.json":                        `{"imports": {"loud": "npm:@mcpx/shout@1.2.0"}}`,
		"script.ts":                            `import odd from "mcpx-odd"; console.log(odd(2));`,
		"sub/script.ts":                        `import { shout } from "loud"; console.log(shout("deno"));`,
		"node_modules/ondisk/package.json":     `{"name": "ondisk", "main": "index.js"}`,
		"node_modules/ondisk/index.js":         `module.exports = "disk";`,
		"other/script.ts":                      `import d from "ondisk"; import fs from "fs"; console.log(d, typeof fs.readFileSync);`,
		"other/node_modules/.keep/placeholder": ``,
	})
	deps := &scripts.Deps{Registry: reg.URL, Cache: filepath.Join(root, "deps")}
	if out, err := bundleRun(t, node, root, deps); err != nil || out != "false\n" {
		t.Errorf("package.json's dependency: %q, %v", out, err)
	}
	if out, err := bundleRun(t, node, filepath.Join(root, "sub"), deps); err != nil || out != "DENO\n" {
		t.Errorf("deno.json's import: %q, %v", out, err)
	}
	if out, err := bundleRun(t, node, filepath.Join(root, "other"), deps); err != nil || out != "disk function\n" {
		t.Errorf("a package on disk, with host: %q, %v", out, err)
	}
	noHost := &scripts.Deps{From: []string{"specifiers", "manifest"}, Registry: reg.URL, Cache: deps.Cache}
	_, err := bundleRun(t, node, filepath.Join(root, "other"), noHost)
	if err == nil || !strings.Contains(err.Error(), `package ondisk is not one of the script's dependencies, and script.deps.from has no "host"`) {
		t.Errorf("without host: %v", err)
	}
	noManifest := &scripts.Deps{From: []string{"specifiers"}, Registry: reg.URL, Cache: deps.Cache}
	if _, err := bundleRun(t, node, root, noManifest); err == nil || !strings.Contains(err.Error(), "mcpx-odd") {
		t.Errorf("without manifest: %v", err)
	}
}

// TestDepsErrorsNameThePackage: a package the registry has not got, an
// unreachable registry, and jsr: off deno are errors naming the package and
// the fix; nothing is left in the cache.
func TestDepsErrorsNameThePackage(t *testing.T) {
	node, reg, root := depsSetup(t)
	cache := filepath.Join(root, "deps")
	for _, c := range []struct{ script, registry, want string }{
		{`import x from "npm:mcpx-nosuch@1"; console.log(x);`, reg.URL, "npm package mcpx-nosuch@1 is not in the npm registry " + reg.URL},
		{`import x from "npm:mcpx-odd@1.0.0"; console.log(x);`, "http://127.0.0.1:1/", "installing the npm packages mcpx-odd@1.0.0: the npm registry http://127.0.0.1:1/ (script.deps.registry), at http://127.0.0.1:1/mcpx-odd, cannot be reached (ECONNREFUSED; offline?)"},
		{`import x from "npm:mcpx-odd@9"; console.log(x);`, reg.URL, "has no version matching"},
		{`import { join } from "jsr:@std/path@1"; console.log(join);`, reg.URL, "jsr:@std/path@1: jsr: packages run on deno only"},
		{`import x from "mcpx-undeclared/sub"; console.log(x);`, reg.URL, "script.ts:1:14: package mcpx-undeclared is not installed, nor a dependency of the script: import it as npm:mcpx-undeclared, declare it"},
	} {
		write(t, root, map[string]string{"script.ts": c.script})
		_, err := bundleRun(t, node, root, &scripts.Deps{Registry: c.registry, Cache: cache, Runtime: "node"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.script, err, c.want)
		}
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("failed installs left %v in the cache", ents)
	}
}

// TestDepsCachePruned: beyond MaxSets, the least recently used set is
// removed after an install; a set used again is kept.
func TestDepsCachePruned(t *testing.T) {
	node, reg, root := depsSetup(t)
	deps := &scripts.Deps{Registry: reg.URL, Cache: filepath.Join(root, "deps"), MaxSets: 2}
	sets := func() []string {
		var out []string
		ms, _ := filepath.Glob(filepath.Join(deps.Cache, "*", ".mcpx-deps.json"))
		for _, m := range ms {
			b, _ := os.ReadFile(m)
			out = append(out, string(b[:bytes.IndexByte(b, '}')+1]))
		}
		return out
	}
	use := func(spec string) {
		t.Helper()
		write(t, root, map[string]string{"script.ts": `import x from "` + spec + `"; console.log(typeof x);`})
		if _, err := bundleRun(t, node, root, deps); err != nil {
			t.Fatal(err)
		}
	}
	use("npm:mcpx-odd@1.0.0")
	use("npm:mcpx-odd@2.0.0")
	use("npm:mcpx-odd@1.0.0") // used again: 2.0.0 is the older
	use("npm:@mcpx/shout@1.2.0")
	got := strings.Join(sets(), " ")
	if len(sets()) != 2 || !strings.Contains(got, `"mcpx-odd":"1.0.0"`) || !strings.Contains(got, `"@mcpx/shout":"1.2.0"`) {
		t.Errorf("the cache holds %s, want odd 1.0.0 and shout", got)
	}
}
