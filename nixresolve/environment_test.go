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

// devShellFlake is a flake with no inputs whose default devShell exports
// MCPX_DEV_VAR and a PATH of its own.
const devShellFlake = `{
  outputs = { self }: {
    devShells.SYSTEM.default = derivation {
      name = "dev"; system = "SYSTEM"; builder = "/bin/bash"; outputs = [ "out" ];
      MCPX_DEV_VAR = "VALUE"; PATH = "/opt/devtools/bin";
      args = [ "-c" "echo > $out" ];
    };
  };
}
`

// shellNix is a legacy shell.nix (no nixpkgs: a bare derivation).
const shellNix = `derivation {
  name = "legacy"; system = "SYSTEM"; builder = "/bin/bash"; outputs = [ "out" ];
  MCPX_LEGACY = "VALUE"; args = [ "-c" "echo > $out" ];
}
`

// TestEnvironmentCaptured: a devShell's and a shell.nix's exported
// variables are captured once, with nix's sandbox variables dropped; later
// lookups, and a new Resolver on the same cache, run no nix; an edited
// shell.nix is captured again, an edited flake only on refresh.
func TestEnvironmentCaptured(t *testing.T) {
	nx := testenv.Nix(t)
	dir := t.TempDir()
	write := func(flakeVal, shellVal string) {
		testenv.WriteFiles(t, dir, map[string]string{
			"flake/flake.nix": strings.NewReplacer("SYSTEM", nx.System, "VALUE", flakeVal).Replace(devShellFlake),
			"shell.nix":       strings.NewReplacer("SYSTEM", nx.System, "VALUE", shellVal).Replace(shellNix),
		})
	}
	write("dev-1", "legacy-1")
	flakeEnv := "flake:path:" + filepath.Join(dir, "flake")
	shellEnv := "shell:" + filepath.Join(dir, "shell.nix")
	cnt := newCounter(t, nx.Bin)
	cache := t.TempDir()
	r := newResolver(t, nx, cache, cnt.bin)

	d, err := r.Environment(t.Context(), flakeEnv)
	if err != nil {
		t.Fatal(err)
	}
	if d.Vars["MCPX_DEV_VAR"] != "dev-1" || d.Vars["PATH"] != "/opt/devtools/bin" || d.Locked.NarHash == "" {
		t.Errorf("devShell captured as %+v, want MCPX_DEV_VAR, PATH and the lock", d)
	}
	for _, v := range []string{"HOME", "TMPDIR", "NIX_BUILD_TOP", "SHELL", "BASH"} {
		if val, ok := d.Vars[v]; ok {
			t.Errorf("captured %s=%q: a sandbox variable, not the shell's", v, val)
		}
	}
	if got := cnt.calls(t); !slices.Equal(got, []string{"flake_metadata", "print-dev-env_--json"}) {
		t.Errorf("capturing a devShell ran %v, want lock and print-dev-env", got)
	}
	if link, err := filepath.EvalSymlinks(d.Root); err != nil || !strings.HasPrefix(link, "/nix/store/") {
		t.Errorf("GC root %s -> %q, %v: want a link into the store", d.Root, link, err)
	}
	s, err := r.Environment(t.Context(), shellEnv)
	if err != nil {
		t.Fatal(err)
	}
	if s.Vars["MCPX_LEGACY"] != "legacy-1" || s.FileHash == "" {
		t.Errorf("shell.nix captured as %+v", s)
	}
	ran := len(cnt.calls(t))

	r2 := newResolver(t, nx, cache, cnt.bin)
	for _, rr := range []*nixresolve.Resolver{r, r2} {
		for _, env := range []string{flakeEnv, shellEnv} {
			if _, err := rr.Environment(t.Context(), env); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := len(cnt.calls(t)) - ran; n != 0 {
		t.Errorf("cached environments ran nix %d times, want none: %v", n, cnt.calls(t))
	}

	write("dev-2", "legacy-2")
	if s, err := r2.Environment(t.Context(), shellEnv); err != nil || s.Vars["MCPX_LEGACY"] != "legacy-2" {
		t.Errorf("an edited shell.nix gave %v, %v; want it captured again", s.Vars, err)
	}
	if d, err := r2.Environment(t.Context(), flakeEnv); err != nil || d.Vars["MCPX_DEV_VAR"] != "dev-1" {
		t.Errorf("an edited flake before a refresh gave %v, %v; want the captured dev-1", d.Vars, err)
	}
	prev, next, err := r2.RefreshEnvironment(t.Context(), flakeEnv)
	if err != nil || prev.Vars["MCPX_DEV_VAR"] != "dev-1" || next.Vars["MCPX_DEV_VAR"] != "dev-2" {
		t.Errorf("refresh: %v -> %v, %v; want dev-1 -> dev-2", prev.Vars, next.Vars, err)
	}
	if _, err := os.Lstat(prev.Root); !os.IsNotExist(err) {
		t.Errorf("the replaced capture's root %s is still there (%v)", prev.Root, err)
	}

	// GC keeps what is referenced and drops the rest with its root.
	dropped, err := r2.GC(func(k string) bool { return k == flakeEnv })
	if err != nil || len(dropped) != 1 || dropped[0].Spec != shellEnv {
		t.Errorf("GC dropped %+v, %v; want the shell environment only", dropped, err)
	}
	if _, err := os.Lstat(next.Root); err != nil {
		t.Errorf("GC removed the kept environment's root: %v", err)
	}
}

// TestEnvironmentErrors: a bad environment value, a missing file, a
// missing devShell and a broken shell.nix each name the environment and
// carry nix's message.
func TestEnvironmentErrors(t *testing.T) {
	nx := testenv.Nix(t)
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{
		"flake/flake.nix": "{ outputs = { self }: { }; }",
		"bad.nix":         "derivation { ",
	})
	r := newResolver(t, nx, t.TempDir(), "")
	for _, tt := range []struct {
		env  string
		kind error
		want string
	}{
		{"docker:ubuntu", nixresolve.ErrSpec, `unknown environment "docker:ubuntu"`},
		{"flake:githb:o/r", nixresolve.ErrSpec, `unknown flake reference type "githb:"`},
		{"shell:" + filepath.Join(dir, "none.nix"), nixresolve.ErrLock, "no such file"},
		{"flake:path:" + filepath.Join(dir, "flake"), nixresolve.ErrBuild, "does not provide attribute"},
		{"shell:" + filepath.Join(dir, "bad.nix"), nixresolve.ErrBuild, "syntax error"},
	} {
		_, err := r.Environment(t.Context(), tt.env)
		if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), "environment "+tt.env) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("environment %s: %v; want %v naming it and %q", tt.env, err, tt.kind, tt.want)
		}
	}
	if d, err := r.Environment(t.Context(), "host"); err != nil || len(d.Vars) != 0 {
		t.Errorf("host: %+v, %v; want no variables", d, err)
	}
}

// TestShellEnvironmentFollowsItsImports (real-use 17): a shell.nix that
// imports a file beside it is captured again when that file changes,
// though the shell.nix did not.
func TestShellEnvironmentFollowsItsImports(t *testing.T) {
	nx := testenv.Nix(t)
	dir := t.TempDir()
	shell := `derivation {
  name = "legacy"; system = "SYSTEM"; builder = "/bin/bash"; outputs = [ "out" ];
  MCPX_IMPORTED = import ./nix/value.nix; args = [ "-c" "echo > $out" ];
}
`
	write := func(v string) {
		testenv.WriteFiles(t, dir, map[string]string{
			"shell.nix":     strings.ReplaceAll(shell, "SYSTEM", nx.System),
			"nix/value.nix": `"` + v + `"` + "\n",
		})
	}
	write("one")
	r := newResolver(t, nx, t.TempDir(), "")
	env := "shell:" + filepath.Join(dir, "shell.nix")
	if d, err := r.Environment(t.Context(), env); err != nil || d.Vars["MCPX_IMPORTED"] != "one" {
		t.Fatalf("captured %v, %v; want MCPX_IMPORTED=one", d.Vars, err)
	}
	write("two")
	if d, err := r.Environment(t.Context(), env); err != nil || d.Vars["MCPX_IMPORTED"] != "two" {
		t.Errorf("after the imported file changed: %v, %v; want MCPX_IMPORTED=two", d.Vars, err)
	}
}
