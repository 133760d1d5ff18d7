package nixresolve_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/nixresolve"
)

// TestRefresh: a floating spec stays on what it resolved to while its flake
// is edited; Refresh locks it anew, builds the new program, replaces the
// entry and moves the GC root; a refresh with nothing changed keeps both.
func TestRefresh(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	writeFlake(t, nx, flake, echoScript("before"))
	cnt := newCounter(t, nx.Bin)
	cache := t.TempDir()
	r := newResolver(t, nx, cache, cnt.bin)
	spec := "nix:path:" + flake + "#demo"
	old, err := r.Resolve(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	writeFlake(t, nx, flake, echoScript("after"))
	if p, err := r.Resolve(t.Context(), spec); err != nil || p != old {
		t.Fatalf("resolution after an edit = %+v, %v; want the cached %+v until a refresh", p, err, old)
	}

	prev, next, err := r.Refresh(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if prev != old {
		t.Errorf("refresh replaced %+v, want %+v", prev, old)
	}
	if next.StorePath == old.StorePath || next.Locked.NarHash == old.Locked.NarHash {
		t.Errorf("refresh after an edit kept store path %s (narHash %s)", next.StorePath, next.Locked.NarHash)
	}
	if out := runProgram(t, next.Path); out != "after" {
		t.Errorf("the refreshed program printed %q, want after", out)
	}
	if link, err := os.Readlink(next.Root); err != nil || link != next.StorePath {
		t.Errorf("new GC root %s -> %q (%v), want %s", next.Root, link, err, next.StorePath)
	}
	if _, err := os.Lstat(old.Root); !os.IsNotExist(err) {
		t.Errorf("the old GC root %s is still there (%v)", old.Root, err)
	}
	before := len(cnt.calls(t))
	if p, err := r.Resolve(t.Context(), spec); err != nil || p != next {
		t.Errorf("resolution after the refresh = %+v, %v; want %+v", p, err, next)
	}
	if n := len(cnt.calls(t)); n != before {
		t.Errorf("resolving a refreshed spec ran nix %d times", n-before)
	}
	// The refresh is in the cache file: a restarted daemon runs the new one.
	if p, err := newResolver(t, nx, cache, cnt.bin).Resolve(t.Context(), spec); err != nil || p.Path != next.Path {
		t.Errorf("a new resolver after the refresh = %+v, %v; want %s", p, err, next.Path)
	}

	_, same, err := r.Refresh(t.Context(), spec)
	if err != nil || same.StorePath != next.StorePath || same.Root != next.Root {
		t.Errorf("a refresh with nothing changed = %+v, %v; want %s", same, err, next.StorePath)
	}
	if link, err := os.Readlink(next.Root); err != nil || link != next.StorePath {
		t.Errorf("an unchanged refresh lost the GC root: %q %v", link, err)
	}

	// A failed refresh keeps what runs.
	testenv.WriteFiles(t, flake, map[string]string{"flake.nix": "{ outputs = { self }: { ; }"})
	if _, _, err := r.Refresh(t.Context(), spec); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("refresh of a broken flake: %v, want nix's syntax error", err)
	}
	if p, err := r.Resolve(t.Context(), spec); err != nil || p.Path != next.Path {
		t.Errorf("after a failed refresh: %+v, %v; want %s kept", p, err, next.Path)
	}
}

// TestEntries: ls shows each spec with its locked ref, store path, program
// and whether the spec pins a revision.
func TestEntries(t *testing.T) {
	nx := testenv.Nix(t)
	flake := t.TempDir()
	writeFlake(t, nx, flake, echoScript("listed"))
	testenv.RunGit(t, flake, "init", "-q")
	testenv.RunGit(t, flake, "add", ".")
	testenv.RunGit(t, flake, "commit", "-q", "-m", "flake")
	head := testenv.RunGit(t, flake, "rev-parse", "HEAD")
	floating := "nix:git+file://" + flake + "#demo"
	pinned := "nix:git+file://" + flake + "?rev=" + head + "#plain"
	r := newResolver(t, nx, t.TempDir(), "")
	want := map[string]bool{floating: false, pinned: true}
	for spec := range want {
		if _, err := r.Resolve(t.Context(), spec); err != nil {
			t.Fatal(err)
		}
	}
	es := r.Entries()
	if len(es) != 2 || !slices.IsSortedFunc(es, func(a, b nixresolve.Entry) int { return strings.Compare(a.Spec, b.Spec) }) {
		t.Fatalf("entries %+v, want two sorted by spec", es)
	}
	for _, e := range es {
		pin, ok := want[e.Spec]
		if !ok {
			t.Errorf("unexpected entry %s", e.Spec)
			continue
		}
		if e.Pinned != pin {
			t.Errorf("%s: pinned = %v, want %v", e.Spec, e.Pinned, pin)
		}
		if e.Locked.Rev != head || !strings.HasPrefix(e.StorePath, "/nix/store/") || filepath.Dir(filepath.Dir(e.Path)) != e.StorePath || e.ResolvedAt.IsZero() {
			t.Errorf("%s: entry %+v, want rev %s, a store path and its program", e.Spec, e, head)
		}
	}
}

// TestGC: entries no one keeps are dropped with their GC roots, so nix's
// collector may take their store paths; kept entries, and their roots,
// stay; a stray root no entry names is removed.
func TestGC(t *testing.T) {
	nx := testenv.Nix(t)
	kept, gone := t.TempDir(), t.TempDir()
	writeFlake(t, nx, kept, echoScript("kept"))
	writeFlake(t, nx, gone, echoScript("gone"))
	cache := t.TempDir()
	r := newResolver(t, nx, cache, "")
	keepSpec, goneSpec := "nix:path:"+kept+"#demo", "nix:path:"+gone+"#demo"
	k, err := r.Resolve(t.Context(), keepSpec)
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.Resolve(t.Context(), goneSpec)
	if err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(cache, "roots", "stray")
	if err := os.Symlink(g.StorePath, stray); err != nil {
		t.Fatal(err)
	}
	var asked []string
	dropped, err := r.GC(func(spec string) bool { asked = append(asked, spec); return spec == keepSpec })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{goneSpec, keepSpec}
	slices.Sort(asked)
	slices.Sort(want)
	if !slices.Equal(asked, want) {
		t.Errorf("GC asked about %v, want both specs", asked)
	}
	if len(dropped) != 1 || dropped[0].Spec != goneSpec {
		t.Fatalf("dropped %+v, want %s", dropped, goneSpec)
	}
	if es := r.Entries(); len(es) != 1 || es[0].Spec != keepSpec {
		t.Errorf("entries after GC: %+v, want only %s", es, keepSpec)
	}
	for _, root := range []string{g.Root, stray} {
		if _, err := os.Lstat(root); !os.IsNotExist(err) {
			t.Errorf("root %s survived GC (%v)", root, err)
		}
	}
	if link, err := os.Readlink(k.Root); err != nil || link != k.StorePath {
		t.Errorf("the kept root %s -> %q (%v)", k.Root, link, err)
	}
	// The dropped path is collectable now; the kept one is not.
	if out, err := nixCmd(nx, "store", "delete", g.StorePath); err != nil {
		t.Errorf("nix store delete of a dropped path: %v %s", err, out)
	}
	if out, err := nixCmd(nx, "store", "delete", k.StorePath); err == nil || !strings.Contains(out, "still alive") {
		t.Errorf("nix store delete of a kept path: %v %s; want it refused as alive", err, out)
	}
	// The cache file agrees: a restarted daemon has only the kept entry.
	if es := newResolver(t, nx, cache, "").Entries(); len(es) != 1 || es[0].Spec != keepSpec {
		t.Errorf("entries after a restart: %+v", es)
	}
}
