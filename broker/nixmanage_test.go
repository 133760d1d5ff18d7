package broker_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// retag rewrites the demo flake of spec (nix:path:<dir>#demo) so that its
// wrapper marks the child with tag.
func retag(t *testing.T, spec, tag string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimSuffix(strings.TrimPrefix(spec, "nix:path:"), "#demo")
	testenv.WriteFiles(t, dir, map[string]string{
		"demo.sh": "#!/bin/sh\nMCPX_NIX_WRAPPED=" + tag + " " + demo.EnvServer + "=1 exec " + strconv.Quote(self) + " \"$@\"\n",
	})
}

func instanceIDs(b *broker.Broker, server string) []string {
	var ids []string
	for _, in := range b.Instances() {
		if in.Server == server {
			ids = append(ids, in.ID)
		}
	}
	return ids
}

// TestNixRefresh: an edited flake changes nothing until a refresh; the
// refresh resolves the new store path and replaces the instances of every
// server running that spec, so their next calls run the new program; a
// refresh with nothing changed replaces nothing.
func TestNixRefresh(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	spec := nixDemo(t, nx, "path", "v1")
	b := nixBroker(t, newNixResolver(t, nx, t.TempDir(), nx.Bin), map[string]string{"demo": spec, "twin": spec, "plain": "SELF"})
	marker := `{"name":"MCPX_NIX_WRAPPED"}`
	for _, s := range []string{"demo", "twin"} {
		if got := callText(t, b, req(s, ""), "env", marker); got != "v1" {
			t.Fatalf("%s: MCPX_NIX_WRAPPED = %q, want v1", s, got)
		}
	}
	callText(t, b, req("plain", ""), "echo", `{"message":"x"}`)
	plainIDs := instanceIDs(b, "plain")
	oldIDs := instanceIDs(b, "demo")

	retag(t, spec, "v2")
	if got := callText(t, b, req("demo", ""), "env", marker); got != "v1" {
		t.Fatalf("before a refresh the edited flake runs: MCPX_NIX_WRAPPED = %q, want v1", got)
	}
	res, err := b.NixRefresh(t.Context(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Current.StorePath == res.Previous.StorePath || res.Previous.StorePath == "" {
		t.Fatalf("refresh %+v: want a changed store path", res)
	}
	if strings.Join(res.Replaced, ",") != "demo,twin" {
		t.Errorf("refresh replaced %v, want demo and twin (one spec)", res.Replaced)
	}
	for _, s := range []string{"demo", "twin"} {
		if got := callText(t, b, req(s, ""), "env", marker); got != "v2" {
			t.Errorf("%s after the refresh: MCPX_NIX_WRAPPED = %q, want v2", s, got)
		}
	}
	newIDs := instanceIDs(b, "demo")
	if len(newIDs) != 1 || len(oldIDs) != 1 || newIDs[0] == oldIDs[0] {
		t.Errorf("demo's instances went from %v to %v, want one new instance", oldIDs, newIDs)
	}
	if got := instanceIDs(b, "plain"); strings.Join(got, ",") != strings.Join(plainIDs, ",") {
		t.Errorf("the plain server's instances went from %v to %v: a refresh touches only its spec's servers", plainIDs, got)
	}
	ls := b.NixList()
	if len(ls.Servers) != 2 || ls.Servers[0].Program.StorePath != res.Current.StorePath || ls.Servers[1].Spec != spec {
		t.Errorf("nix list after the refresh: %+v", ls)
	}

	same, err := b.NixRefresh(t.Context(), "twin")
	if err != nil || same.Changed || len(same.Replaced) != 0 {
		t.Errorf("a refresh with nothing changed = %+v, %v; want nothing replaced", same, err)
	}
	if got := instanceIDs(b, "demo"); strings.Join(got, ",") != strings.Join(newIDs, ",") {
		t.Errorf("an unchanged refresh replaced demo's instances: %v -> %v", newIDs, got)
	}

	var be *broker.Error
	if _, err := b.NixRefresh(t.Context(), "plain"); !errors.As(err, &be) || be.Kind != broker.KindBadRequest {
		t.Errorf("refresh of a plain command: %v, want bad-request", err)
	}
	if _, err := b.NixRefresh(t.Context(), "nope"); !errors.As(err, &be) || be.Kind != broker.KindNotFound {
		t.Errorf("refresh of an unknown server: %v, want not-found", err)
	}
	// A refresh that fails keeps the running program.
	dir := strings.TrimSuffix(strings.TrimPrefix(spec, "nix:path:"), "#demo")
	testenv.WriteFiles(t, dir, map[string]string{"flake.nix": "{ outputs = { self }: { ; }"})
	if _, err := b.NixRefresh(t.Context(), "demo"); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("refresh of a broken flake: %v, want nix's syntax error", err)
	}
	if got := callText(t, b, req("demo", ""), "env", marker); got != "v2" {
		t.Errorf("after a failed refresh: MCPX_NIX_WRAPPED = %q, want v2", got)
	}
}

// TestNixListGC: the list shows each nix: server's spec, locked rev, store
// path and whether it is pinned, and the entries no server references;
// GC drops those with their roots and keeps the rest.
func TestNixListGC(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	spec := nixDemo(t, nx, "git+file", "listed")
	dir := strings.TrimSuffix(strings.TrimPrefix(spec, "nix:git+file://"), "#demo")
	head := testenv.RunGit(t, dir, "rev-parse", "HEAD")
	pinned := "nix:git+file://" + dir + "?rev=" + head + "#demo"
	orphan := nixDemo(t, nx, "path", "orphan")
	r := newNixResolver(t, nx, t.TempDir(), nx.Bin)
	b := nixBroker(t, r, map[string]string{"demo": spec, "pinned": pinned, "plain": "SELF"})
	callText(t, b, req("demo", ""), "echo", `{"message":"x"}`)
	gone, err := r.Resolve(t.Context(), orphan)
	if err != nil {
		t.Fatal(err)
	}

	ls := b.NixList()
	if len(ls.Servers) != 2 {
		t.Fatalf("nix servers %+v, want demo and pinned", ls.Servers)
	}
	d, p := ls.Servers[0], ls.Servers[1]
	if d.Server != "demo" || d.Spec != spec || d.Pinned || !d.Resolved || d.Program.Locked.Rev != head ||
		!strings.HasPrefix(d.Program.StorePath, "/nix/store/") {
		t.Errorf("demo: %+v, want its spec, rev %s, a store path, floating", d, head)
	}
	if p.Server != "pinned" || !p.Pinned || p.Resolved {
		t.Errorf("pinned: %+v, want pinned and not yet resolved", p)
	}
	if len(ls.Unreferenced) != 1 || ls.Unreferenced[0].Spec != orphan {
		t.Errorf("unreferenced %+v, want %s", ls.Unreferenced, orphan)
	}

	dropped, err := b.NixGC()
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 1 || dropped[0].Spec != orphan {
		t.Errorf("gc dropped %+v, want %s", dropped, orphan)
	}
	if _, err := os.Lstat(gone.Root); !os.IsNotExist(err) {
		t.Errorf("the dropped entry's root %s survived (%v)", gone.Root, err)
	}
	if link, err := os.Readlink(d.Program.Root); err != nil || link != d.Program.StorePath {
		t.Errorf("the referenced root %s -> %q (%v)", d.Program.Root, link, err)
	}
	if ls := b.NixList(); len(ls.Unreferenced) != 0 || !ls.Servers[0].Resolved {
		t.Errorf("after gc: %+v", ls)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(gone.Root), filepath.Base(d.Program.Root))); err != nil {
		t.Errorf("gc removed a live root: %v", err)
	}
}
