package chain_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/config/chain"
)

// tree makes the files and directories of paths (a trailing / is a
// directory) under a fresh canonical temporary directory and returns it.
func tree(t *testing.T, paths ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// short is c with root cut from every path, for readable comparisons.
func short(root string, c chain.Chain) []chain.Dir {
	out := []chain.Dir{}
	cut := func(p string) string {
		if p == "" {
			return ""
		}
		return strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
	}
	for _, d := range c {
		out = append(out, chain.Dir{Kind: d.Kind, Path: cut(d.Path), Config: cut(d.Config), Script: cut(d.Script), Scripts: cut(d.Scripts), Lib: cut(d.Lib)})
	}
	return out
}

func TestFindOrder(t *testing.T) {
	root := tree(t,
		"home/.config/mcpx/config.json", // the user's dir, met again by the walk
		"home/.config/mcpx/scripts/",
		"home/src/.mcpx/config.json",
		"home/src/repo/.config/mcpx/config.json",
		"home/src/repo/.config/mcpx/lib/",
		"home/src/repo/sub/deeper/",
		"etc/mcpx/config.json",
		"over/config.json",
		"over-dir/scripts/",
		"fall.json",
		"solo.ts",
	)
	opts := chain.Options{
		UserDir:   filepath.Join(root, "home/.config/mcpx"),
		SystemDir: filepath.Join(root, "etc/mcpx"),
		Override:  []string{filepath.Join(root, "over/config.json"), filepath.Join(root, "over-dir")},
		Fallback:  []string{filepath.Join(root, "fall.json"), filepath.Join(root, "solo.ts")},
	}
	c, warns := chain.Find(filepath.Join(root, "home/src/repo/sub/deeper"), opts)
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	want := []chain.Dir{
		{Kind: chain.KindOverride, Path: "over/config.json", Config: "over/config.json"},
		{Kind: chain.KindOverride, Path: "over-dir", Scripts: "over-dir/scripts"},
		{Kind: chain.KindProject, Path: "home/src/repo/.config/mcpx", Config: "home/src/repo/.config/mcpx/config.json", Lib: "home/src/repo/.config/mcpx/lib"},
		{Kind: chain.KindProject, Path: "home/src/.mcpx", Config: "home/src/.mcpx/config.json"},
		{Kind: chain.KindUser, Path: "home/.config/mcpx", Config: "home/.config/mcpx/config.json", Scripts: "home/.config/mcpx/scripts"},
		{Kind: chain.KindSystem, Path: "etc/mcpx", Config: "etc/mcpx/config.json"},
		{Kind: chain.KindFallback, Path: "fall.json", Config: "fall.json"},
		{Kind: chain.KindFallback, Path: "solo.ts", Script: "solo.ts"}, // a script file is a script, not a config file
	}
	if d := cmp.Diff(want, short(root, c)); d != "" {
		t.Errorf("chain (-want +got):\n%s", d)
	}
	if got := c.Configs(); len(got) != 6 || got[0] != filepath.Join(root, "over/config.json") {
		t.Errorf("Configs() = %v", got)
	}
}

func TestFindBothDirsWarns(t *testing.T) {
	root := tree(t, "repo/.config/mcpx/config.json", "repo/.mcpx/config.json")
	c, warns := chain.Find(filepath.Join(root, "repo"), chain.Options{})
	want := []chain.Dir{{Kind: chain.KindProject, Path: "repo/.config/mcpx", Config: "repo/.config/mcpx/config.json"}}
	if d := cmp.Diff(want, short(root, c)); d != "" {
		t.Errorf("chain (-want +got):\n%s", d)
	}
	if len(warns) != 1 || warns[0].Path != filepath.Join(root, "repo") || !strings.Contains(warns[0].Msg, "both .config/mcpx and .mcpx") {
		t.Errorf("warnings = %v, want one naming both directories", warns)
	}
}

func TestFindCeiling(t *testing.T) {
	root := tree(t, "a/.mcpx/config.json", "a/b/.mcpx/config.json", "a/b/c/")
	for _, tc := range []struct {
		ceiling string
		want    []string
	}{
		{"", []string{"a/b/.mcpx", "a/.mcpx"}},
		{"a", []string{"a/b/.mcpx"}}, // the walk never enters a ceiling
		{"a/b", []string{}},          // nor goes above one
		{"a/b/c", []string{}},        // the start itself is searched; c has nothing
		{"elsewhere", []string{"a/b/.mcpx", "a/.mcpx"}},
	} {
		opts := chain.Options{}
		if tc.ceiling != "" {
			opts.CeilingDirs = []string{filepath.Join(root, tc.ceiling)}
		}
		c, _ := chain.Find(filepath.Join(root, "a/b/c"), opts)
		got := []string{}
		for _, d := range short(root, c) {
			got = append(got, d.Path)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("ceiling %q (-want +got):\n%s", tc.ceiling, d)
		}
	}
}

func TestFindBadExtraPaths(t *testing.T) {
	root := tree(t, "dir/")
	c, warns := chain.Find(filepath.Join(root, "dir"), chain.Options{
		Override: []string{"relative/path", filepath.Join(root, "missing")},
		Fallback: []string{filepath.Join(root, "gone.json")},
		UserDir:  filepath.Join(root, "no-user-dir"),
	})
	if len(c) != 0 {
		t.Errorf("chain = %v, want empty", c)
	}
	var msgs []string
	for _, w := range warns {
		msgs = append(msgs, w.String())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"relative/path: --override-paths entries must be absolute", "missing: --override-paths entry: does not exist", "gone.json: --fallback-paths entry: does not exist"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}

func TestCacheRevalidates(t *testing.T) {
	root := tree(t, "repo/sub/")
	now := time.Unix(1000, 0)
	c := chain.NewCache(chain.Options{}, time.Second, func() time.Time { return now })
	dir := filepath.Join(root, "repo/sub")
	if got, _ := c.Get(dir); len(got) != 0 {
		t.Fatalf("chain = %v, want empty", got)
	}
	if err := os.MkdirAll(filepath.Join(root, "repo/.mcpx"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get(dir); len(got) != 0 {
		t.Errorf("within the window: chain = %v, want the cached empty one", got)
	}
	now = now.Add(time.Second)
	if got, _ := c.Get(dir); len(got) != 1 || got[0].Path != filepath.Join(root, "repo/.mcpx") {
		t.Errorf("after the window: chain = %v, want repo/.mcpx", got)
	}
	if err := os.Remove(filepath.Join(root, "repo/.mcpx")); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	if got, _ := c.Get(dir); len(got) != 0 {
		t.Errorf("after Reset: chain = %v, want empty", got)
	}
}

func TestCacheBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	c := chain.NewCache(chain.Options{}, time.Hour, func() time.Time { return now })
	for i := range chain.MaxCached + 10 {
		now = now.Add(time.Millisecond)
		c.Get("/nonexistent/" + strings.Repeat("x", i%7) + "/" + time.Duration(i).String())
	}
	if n := c.Len(); n > chain.MaxCached {
		t.Errorf("cache holds %d entries, more than MaxCached %d", n, chain.MaxCached)
	}
}
