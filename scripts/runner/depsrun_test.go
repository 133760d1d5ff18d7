package runner_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/npmtest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/scripts"
	"mcpx.dev/mcpx/scripts/runner"
)

// TestScriptDeps: a run's Deps reach the bundle — an npm: package is
// installed once and the second run reuses it with no fetch — and take the
// run's runtime (jsr: is refused on node, naming the import).
func TestScriptDeps(t *testing.T) {
	proctest.CheckNoLeaks(t)
	testenv.Program(t, "npm", "apt-get install npm")
	t.Setenv("npm_config_cache", t.TempDir())
	node := scripts.Runtime{Name: "node", Path: testenv.Node(t)}
	reg := npmtest.Start(t, npmtest.Package{Name: "mcpx-odd", Version: "1.0.0", Files: map[string]string{"index.js": `module.exports = (n) => n % 2 === 1;`}})
	b := startBroker(t, "global")
	ctx := t.Context()
	dir := t.TempDir()
	r, err := runner.Start(ctx, runner.Options{Client: b.unix, Caller: client.Caller{Cwd: dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	script, jsr := filepath.Join(dir, "odd.ts"), filepath.Join(dir, "jsr.ts")
	testenv.WriteFile(t, script, `import odd from "npm:mcpx-odd@1.0.0"; export default () => odd(7);`)
	testenv.WriteFile(t, jsr, `import { join } from "jsr:@std/path@1"; console.log(join("a"));`)
	deps := &scripts.Deps{Registry: reg.URL, Cache: filepath.Join(dir, "deps")}
	for i := range 2 {
		env, err := r.Script(ctx, runner.Script{Runtime: node, Path: script, Cache: filepath.Join(dir, "cache"), Deps: deps, Envelope: true})
		if err != nil || env.ExitCode != 0 || string(env.Result) != "true" {
			t.Errorf("run %d: %+v, %v", i, env, err)
		}
	}
	if n := reg.Fetches("mcpx-odd"); n != 1 {
		t.Errorf("the registry served mcpx-odd %d times, want once", n)
	}
	var re *runner.Error
	_, err = r.Script(ctx, runner.Script{Runtime: node, Path: jsr, Cache: filepath.Join(dir, "cache"), Deps: deps})
	if !errors.As(err, &re) || re.Op != runner.OpBundle || !strings.Contains(err.Error(), "jsr:@std/path@1: jsr: packages run on deno only (--runtime deno); on node") {
		t.Errorf("jsr: on node: %v", err)
	}
}
