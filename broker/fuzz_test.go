package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
)

// FuzzCwdUnderRoots fuzzes the canonicalise-and-contain check of a
// declared cwd against a caller's roots (Broker.Target): over a real tree
// with a sibling directory, a symlink out of the root and one within it,
// an arbitrary path below the tree's base (unclean: "..", ".", "//",
// symlinks) is admitted exactly when its canonical form (symlinks
// resolved) is an existing directory inside the root, and the target then
// carries that same canonical path, never the declared one.
func FuzzCwdUnderRoots(f *testing.F) {
	for _, s := range []string{"root", "root/a", "root/../sibling", "root/escape", "root/escape/x", "root/inner", "root/a/../..",
		"root//a/./", "rootx", "root/../root/a", "sibling", "root/inner/../../sibling", "root/a/..", ""} {
		f.Add(s)
	}
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	root := filepath.Join(base, "root")
	for _, d := range []string{"root/a/deep", "root/b", "sibling/x", "rootx"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for link, to := range map[string]string{"root/escape": "../sibling", "root/inner": "a", "root/abs": base} {
		if err := os.Symlink(to, filepath.Join(base, link)); err != nil {
			f.Fatal(err)
		}
	}
	b := newDemoBroker(f, map[string]config.ScopeKind{"demo": config.ScopeCwd})
	caller := broker.Caller{Name: "fuzz", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"demo"}, Roots: []string{root}}}}

	f.Fuzz(func(t *testing.T, rel string) {
		if strings.ContainsRune(rel, 0) {
			return // not a path
		}
		cwd := base + "/" + rel
		canon, cerr := filepath.EvalSymlinks(cwd)
		fi, serr := os.Stat(cwd)
		inside := cerr == nil && serr == nil && fi.IsDir() && (canon == root || strings.HasPrefix(canon, root+"/"))

		tg, err := b.Target(broker.Request{Caller: caller, Server: "demo", Context: broker.CallContext{Cwd: cwd}})
		if err != nil {
			if inside {
				t.Fatalf("cwd %q (canonical %q, inside %s) refused: %v", cwd, canon, root, err)
			}
			return
		}
		if !inside {
			t.Fatalf("cwd %q (canonical %q, err %v) admitted with target cwd %q; root %s", cwd, canon, cerr, tg.Cwd, root)
		}
		if tg.Cwd != canon || tg.Key != "cwd:"+canon || tg.Root != canon {
			t.Fatalf("cwd %q: target cwd %q key %q root %q, want the canonical %q", cwd, tg.Cwd, tg.Key, tg.Root, canon)
		}
	})
}
