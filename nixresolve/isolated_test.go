package nixresolve_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/nixresolve"
)

// toolsFlake is a flake with no inputs whose packages each put one
// script under bin/: tool and other, and tool2, a second bin/tool.
const toolsFlake = `{
  outputs = { self }: let
    system = "SYSTEM";
    mk = name: bin: say: derivation {
      inherit name system;
      builder = "/bin/sh";
      args = [ "-c" "/bin/mkdir -p $out/bin && printf '#!/bin/sh\\necho ${say}\\n' > $out/bin/${bin} && /bin/chmod +x $out/bin/${bin}" ];
    };
  in {
    packages.${system} = {
      tool = mk "tool-1" "tool" "TAG";
      tool2 = mk "tool-2" "tool" "second";
      other = mk "other-1" "other" "other";
    };
  };
}
`

func writeTools(t *testing.T, nx testenv.NixSetup, dir, tag string) {
	t.Helper()
	testenv.WriteFiles(t, dir, map[string]string{"flake.nix": strings.NewReplacer("SYSTEM", nx.System, "TAG", tag).Replace(toolsFlake)})
}

// binNames lists the programs under an environment's PATH.
func binNames(t *testing.T, d nixresolve.DevEnv) []string {
	t.Helper()
	entries, err := os.ReadDir(d.Vars["PATH"])
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestIsolatedEnvironment: an isolated environment is one store path
// holding only its packages' programs, built from a generated flake, and
// its only variable is a PATH of that path's bin; a relative package is
// the resolver's directory's; the earlier of two packages with one
// program wins; it is cached (no nix on a hit, nor for a new resolver on
// the cache), stays on what it locked when the flake moves, and moves on
// refresh, its old root removed; GC drops it with its generated flake.
func TestIsolatedEnvironment(t *testing.T) {
	nx := testenv.Nix(t)
	dir := t.TempDir()
	writeTools(t, nx, dir, "one")
	cnt := newCounter(t, nx.Bin)
	cache := t.TempDir()
	r := newResolver(t, nx, cache, cnt.bin, func(o *nixresolve.Options) { o.Dir = dir })

	env := "isolated:nix:.#tool nix:path:" + dir + "#other"
	d, err := r.Environment(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Vars) != 1 || !strings.HasPrefix(d.Vars["PATH"], "/nix/store/") || !strings.HasSuffix(d.Vars["PATH"], "-mcpx-isolated-env/bin") {
		t.Fatalf("isolated environment's variables: %v; want PATH=<store path>/bin alone", d.Vars)
	}
	if got := binNames(t, d); !slices.Equal(got, []string{"other", "tool"}) {
		t.Errorf("the environment holds %v, want [other tool]", got)
	}
	if out := runProgram(t, filepath.Join(d.Vars["PATH"], "tool")); out != "one" {
		t.Errorf("tool printed %q, want one", out)
	}
	if want := "isolated:nix:" + dir + "#tool nix:path:" + dir + "#other"; d.Environment != want {
		t.Errorf("key %q, want %q (the relative ref made absolute)", d.Environment, want)
	}
	if got := cnt.calls(t); !slices.Equal(got, []string{"flake_lock", "build_--json"}) {
		t.Errorf("building it ran %v, want one lock and one build", got)
	}
	gen, err := os.ReadFile(gen0(t, cache))
	if err != nil || !strings.Contains(string(gen), "builtin:buildenv") {
		t.Errorf("generated flake: %v\n%s", err, gen)
	}

	ran := len(cnt.calls(t))
	r2 := newResolver(t, nx, cache, cnt.bin, func(o *nixresolve.Options) { o.Dir = dir })
	for _, rr := range []*nixresolve.Resolver{r, r2} {
		if again, err := rr.Environment(t.Context(), env); err != nil || again.Vars["PATH"] != d.Vars["PATH"] {
			t.Errorf("cached: %v, %v; want %v", again.Vars, err, d.Vars)
		}
	}
	if n := len(cnt.calls(t)) - ran; n != 0 {
		t.Errorf("a cached isolated environment ran nix %d times: %v", n, cnt.calls(t))
	}

	writeTools(t, nx, dir, "two")
	if again, err := r2.Environment(t.Context(), env); err != nil || again.Vars["PATH"] != d.Vars["PATH"] {
		t.Errorf("an edited flake before a refresh gave %v, %v; want what was locked", again.Vars, err)
	}
	prev, next, err := r2.RefreshEnvironment(t.Context(), env)
	if err != nil || prev.Root != d.Root || next.Root == d.Root {
		t.Fatalf("refresh: %s -> %s, %v; want a new root", prev.Root, next.Root, err)
	}
	if out := runProgram(t, filepath.Join(next.Vars["PATH"], "tool")); out != "two" {
		t.Errorf("after the refresh tool printed %q, want two", out)
	}
	if _, err := os.Lstat(prev.Root); !os.IsNotExist(err) {
		t.Errorf("the replaced environment's root %s is still there (%v)", prev.Root, err)
	}

	first, err := r2.Environment(t.Context(), "isolated:nix:.#tool2 nix:.#tool")
	if err != nil {
		t.Fatal(err)
	}
	if out := runProgram(t, filepath.Join(first.Vars["PATH"], "tool")); out != "second" {
		t.Errorf("with tool2 first, tool printed %q; want tool2's (the earlier package wins)", out)
	}

	dropped, err := r2.GC(func(k string) bool { return k == next.Environment })
	if err != nil || len(dropped) != 1 || dropped[0].Spec != first.Environment {
		t.Errorf("GC dropped %+v, %v; want the second environment only", dropped, err)
	}
	if dirs, _ := os.ReadDir(filepath.Join(cache, "isolated")); len(dirs) != 1 {
		t.Errorf("after GC %d generated flakes are left, want the kept one's", len(dirs))
	}
}

// gen0 is the one generated flake.nix in cache.
func gen0(t *testing.T, cache string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(cache, "isolated", "*", "flake.nix"))
	if len(m) != 1 {
		t.Fatalf("generated flakes: %v, want one", m)
	}
	return m[0]
}

// TestIsolatedEnvironmentErrors: a package the flake does not have, and
// a flake that is not there, fail naming the package's spec and the
// environment, with nix's words.
func TestIsolatedEnvironmentErrors(t *testing.T) {
	nx := testenv.Nix(t)
	dir := t.TempDir()
	writeTools(t, nx, dir, "one")
	r := newResolver(t, nx, t.TempDir(), "")
	for _, tt := range []struct {
		env  string
		kind error
		want string
	}{
		{"isolated:nix:path:" + dir + "#nope", nixresolve.ErrBuild, "nix:path:" + dir + "#nope: the flake has no such package"},
		{"isolated:nix:path:" + dir + "/none#tool", nixresolve.ErrLock, "No such file or directory"},
	} {
		_, err := r.Environment(t.Context(), tt.env)
		if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), "environment "+tt.env) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want %v naming it and %q", tt.env, err, tt.kind, tt.want)
		}
	}
}
