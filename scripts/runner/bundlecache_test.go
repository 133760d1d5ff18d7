package runner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/scripts"
	"mcpx.dev/mcpx/scripts/runner"
)

// TestSnippetBundleCache: a snippet that imports nothing is bundled once
// and run from the cache after (same result); a different snippet, other
// options, or an import get bundles of their own or none; the cache keeps
// a bundle per key.
func TestSnippetBundleCache(t *testing.T) {
	b := startBroker(t, "global").byURL(t)
	node := scripts.Runtime{Name: "node", Path: testenv.Node(t)}
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	ctx := t.Context()
	r, err := runner.Start(ctx, runner.Options{Client: b.unix, Caller: client.Caller{Cwd: dir}, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	bundles := func() []string {
		m, _ := filepath.Glob(filepath.Join(cache, "bundle-*"))
		return m
	}
	run := func(snippet string, args json.RawMessage) string {
		t.Helper()
		env, err := r.Script(ctx, runner.Script{Runtime: node, Path: scripts.ExecName, Snippet: snippet, Args: args, Cache: cache, Envelope: true})
		if err != nil || env.ExitCode != 0 {
			t.Fatalf("%s: %v, %+v", snippet, err, env)
		}
		return string(env.Result)
	}
	echo := `return (await demo.echo({message: "hi " + args[0]})).content[0].text`
	if got := run(echo, json.RawMessage(`["a"]`)); got != `"hi a"` {
		t.Fatalf("first run: %s", got)
	}
	if n := len(bundles()); n != 1 {
		t.Fatalf("%d bundles kept after one snippet, want 1", n)
	}
	// The kept bundle is what runs: spoil it and the run says so.
	kept := filepath.Join(bundles()[0], "script.mjs")
	good, err := os.ReadFile(kept)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kept, []byte(strings.Replace(string(good), `"hi "`, `"cached "`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := run(echo, json.RawMessage(`["a"]`)); got != `"cached a"` {
		t.Errorf("second run: %s, want the kept bundle's answer", got)
	}
	os.WriteFile(kept, good, 0o600)
	if got := run(echo, json.RawMessage(`["b"]`)); got != `"hi b"` || len(bundles()) != 2 {
		t.Errorf("other args: %s with %d bundles, want hi b and a bundle of its own", got, len(bundles()))
	}
	if got := run(`return 2`, nil); got != "2" || len(bundles()) != 3 {
		t.Errorf("another snippet: %s with %d bundles, want 2 and a bundle of its own", got, len(bundles()))
	}
	if got := run(`const {sep} = await import("node:path"); return sep`, nil); got != `"/"` || len(bundles()) != 3 {
		t.Errorf("a snippet with an import: %s with %d bundles, want / and none kept", got, len(bundles()))
	}
}

// byURL makes the scripts of the test reach b by URL (there is no daemon
// record here), and returns b.
func (b *broker) byURL(t *testing.T) *broker {
	t.Setenv("MCPX_URL", b.url)
	t.Setenv("MCPX_TOKEN", b.token)
	return b
}
