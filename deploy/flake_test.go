package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"mcpx.dev/mcpx/deploy"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The repository's flake is checked offline, where nixpkgs cannot be
// fetched: `nix flake check --no-build` with nixpkgs overridden by the
// stand-in in testdata/nixpkgs-stub (the flake's outputs, the package's
// attributes and vendorHash's form), and both modules evaluated against it
// (testdata/nix-eval-module.nix). Not checked here: the build itself
// (buildGoModule needs nixpkgs' Go), nixpkgs' option types and module
// merging, and the NixOS and home-manager systemd renderings of the unit.

// flakeCopy copies the flake's files out of the git worktree: in a git
// repository nix reads only tracked files, and a test must not depend on
// what is committed yet.
func flakeCopy(t *testing.T) string {
	t.Helper()
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	files := []string{"flake.nix", "go.mod", "go.sum"}
	nixFiles, _ := filepath.Glob(filepath.Join(root, "nix", "*.nix"))
	for _, f := range nixFiles {
		files = append(files, filepath.Join("nix", filepath.Base(f)))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		testenv.WriteFile(t, filepath.Join(dir, f), string(b))
	}
	return dir
}

func nixRun(t *testing.T, n testenv.NixSetup, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(n.Bin, args...)
	cmd.Env = n.CmdEnv()
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), &nixError{err, string(ee.Stderr)}
	}
	return string(out), err
}

type nixError struct {
	err    error
	stderr string
}

func (e *nixError) Error() string { return e.err.Error() + ": " + e.stderr }

func stubRef(t *testing.T) string {
	abs, err := filepath.Abs(filepath.Join("testdata", "nixpkgs-stub"))
	if err != nil {
		t.Fatal(err)
	}
	return "path:" + abs
}

func TestFlakeCheck(t *testing.T) {
	n := testenv.Nix(t)
	dir := flakeCopy(t)
	if out, err := nixRun(t, n, "flake", "check", "--no-build", "--no-write-lock-file",
		"--override-input", "nixpkgs", stubRef(t), "path:"+dir); err != nil {
		t.Fatalf("nix flake check: %v\n%s", err, out)
	}
	out, err := nixRun(t, n, "eval", "--json", "--no-write-lock-file", "--override-input", "nixpkgs", stubRef(t),
		"path:"+dir+"#packages."+n.System+".default", "--apply", "p: { name = p.name; main = p.meta.mainProgram; sub = p.subPackages; }")
	if err != nil {
		t.Fatalf("nix eval of the package: %v", err)
	}
	if want := `{"main":"mcpx","name":"mcpx-dev","sub":["cmd/mcpx"]}`; strings.TrimSpace(out) != want {
		t.Errorf("package = %s, want %s", out, want)
	}
	// The package wraps its runtime set onto PATH, after the caller's;
	// another set is an override away, and mcpx-bare has none.
	out, err = nixRun(t, n, "eval", "--json", "--no-write-lock-file", "--override-input", "nixpkgs", stubRef(t),
		"path:"+dir+"#packages."+n.System, "--apply", `ps: map (p: { rt = map (r: r.name) p.runtimes; post = p.postInstall; }) [
			ps.default (ps.default.override { runtimes = [ (builtins.head ps.default.runtimes) ]; }) ps.mcpx-bare ]`)
	if err != nil {
		t.Fatalf("nix eval of the runtimes: %v", err)
	}
	var rts []struct {
		RT   []string `json:"rt"`
		Post string   `json:"post"`
	}
	if err := json.Unmarshal([]byte(out), &rts); err != nil || len(rts) != 3 {
		t.Fatalf("runtimes: %s, %v", out, err)
	}
	if got := strings.Join(rts[0].RT, " "); got != "git deno bun nodejs" || !regexp.MustCompile(`wrapProgram \$out/bin/mcpx --suffix PATH : /nix/store/\S+-git/bin:\S+-deno/bin:\S+-bun/bin:\S+-nodejs/bin`).MatchString(rts[0].Post) {
		t.Errorf("the default package's runtimes %q, postInstall %q; want git, deno, bun and node wrapped onto PATH", got, rts[0].Post)
	}
	if got := strings.Join(rts[1].RT, " "); got != "git" || strings.Contains(rts[1].Post, "nodejs") {
		t.Errorf("overridden to git alone: runtimes %q, postInstall %q", got, rts[1].Post)
	}
	if len(rts[2].RT) != 0 || rts[2].Post != "" {
		t.Errorf("mcpx-bare: runtimes %q, postInstall %q; want none", rts[2].RT, rts[2].Post)
	}
	// The check can fail: a flake whose package is not a derivation.
	b, _ := os.ReadFile(filepath.Join(dir, "nix", "package.nix"))
	testenv.WriteFile(t, filepath.Join(dir, "nix", "package.nix"), strings.Replace(string(b), `vendorHash = "sha256-`, `vendorHash = "md5-`, 1))
	if _, err := nixRun(t, n, "flake", "check", "--no-build", "--no-write-lock-file",
		"--override-input", "nixpkgs", stubRef(t), "path:"+dir); err == nil {
		t.Error("nix flake check accepted a package with a malformed vendorHash")
	}
}

// serviceKeys are the [Service] directives of the unit mcpx service
// install writes.
func serviceKeys(t *testing.T) map[string]string {
	f, err := deploy.Render(deploy.Linux, "/x", deploy.Service{Binary: "/b/mcpx", StateDir: "/s"})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	in := false
	for line := range strings.Lines(string(f.Content)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			in = line == "[Service]"
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && in && !strings.HasPrefix(line, "#") {
			keys[k] = v
		}
	}
	return keys
}

// TestModules evaluates the NixOS and home-manager modules: the command
// line carries every option, and the unit has the hardening of the one
// `mcpx service install` writes.
func TestModules(t *testing.T) {
	n := testenv.Nix(t)
	dir := flakeCopy(t)
	evalFile, _ := filepath.Abs(filepath.Join("testdata", "nix-eval-module.nix"))
	settings := `{ enable = true; package = pkgs.stub "mcpx"; config = { servers = { }; };
		extraPackages = [ pkgs.coreutils ];
		tailnet = { enable = true; hostname = "box"; authKeyFile = "/run/keys/ts"; tags = [ "tag:mcpx" "tag:dev" ]; }; }`
	eval := func(module string) map[string]any {
		expr := `let stub = (builtins.getFlake "` + stubRef(t) + `").outputs; pkgs = stub.legacyPackages.${builtins.currentSystem}; in
			import ` + evalFile + ` { module = ` + filepath.Join(dir, "nix", module) + `; inherit stub; settings = ` + settings + `; }`
		out, err := nixRun(t, n, "eval", "--impure", "--json", "--expr", expr)
		if err != nil {
			t.Fatalf("evaluating %s: %v", module, err)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	dig := func(v any, path ...string) any {
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	want := serviceKeys(t)
	for _, tc := range []struct {
		module string
		path   []string
	}{
		{"nixos.nix", []string{"systemd", "user", "services", "mcpx", "serviceConfig"}},
		{"home-manager.nix", []string{"systemd", "user", "services", "mcpx", "Service"}},
	} {
		svc, _ := dig(eval(tc.module), tc.path...).(map[string]any)
		if svc == nil {
			t.Fatalf("%s: no %s", tc.module, strings.Join(tc.path, "."))
		}
		exec, _ := svc["ExecStart"].(string)
		if !regexp.MustCompile(`^"/nix/store/[^"]+-mcpx/bin/mcpx" "serve" "--state-dir" "%h/.local/state/mcpx" "--config" "/nix/store/[^"]+-mcpx-config.json" "--tailnet" "--tailnet-hostname" "box" "--tailnet-authkey-file" "/run/keys/ts" "--tailnet-tags" "tag:mcpx,tag:dev"$`).MatchString(exec) {
			t.Errorf("%s: ExecStart = %s", tc.module, exec)
		}
		if _, ok := svc["PrivateTmp"]; ok {
			t.Errorf("%s: PrivateTmp is set; the unit mcpx writes leaves it out (it hides /tmp worktrees)", tc.module)
		}
		for k := range want {
			if k == "ExecStart" || k == "ExecReload" || k == "Environment" || k == "ReadWritePaths" {
				continue // checked above, or written the module's way
			}
			got := strings.ToLower(strings.Trim(strings.ReplaceAll(jsonText(svc[k]), "true", "yes"), `"`))
			if got != strings.ToLower(want[k]) {
				t.Errorf("%s: %s = %s, the unit mcpx writes has %s", tc.module, k, got, want[k])
			}
		}
	}
	// nix-darwin: a launchd user agent running the same command line,
	// $HOME for systemd's %h, with the package's and extraPackages' PATH.
	agent, _ := dig(eval("darwin.nix"), "launchd", "user", "agents", "mcpx").(map[string]any)
	cmd, _ := agent["command"].(string)
	if !regexp.MustCompile(`^/bin/sh -c 'exec "/nix/store/[^"]+-mcpx/bin/mcpx" "serve" "--state-dir" "\$HOME/.local/state/mcpx" "--config" "/nix/store/[^"]+-mcpx-config.json" "--tailnet" .*"--tailnet-tags" "tag:mcpx,tag:dev"'$`).MatchString(cmd) {
		t.Errorf("darwin.nix: command = %s", cmd)
	}
	if sc := jsonText(agent["serviceConfig"]); !strings.Contains(sc, `"Label":"dev.mcpx.serve"`) || !regexp.MustCompile(`"PATH":"/nix/store/[^"]+-mcpx/bin:/nix/store/[^"]+-coreutils/bin:/usr/bin:/bin"`).MatchString(sc) {
		t.Errorf("darwin.nix: serviceConfig = %s", sc)
	}
	// With enable = false a module sets nothing.
	settings = `{ enable = false; package = pkgs.stub "mcpx"; }`
	if v := eval("nixos.nix"); len(v) != 0 {
		t.Errorf("disabled module sets %v", v)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestVendorHash recomputes the package's vendorHash: the NAR hash of `go
// mod vendor`'s output, which is what buildGoModule's module derivation
// produces. A go.sum change without a new vendorHash fails here, not in a
// user's nix build.
func TestVendorHash(t *testing.T) {
	n := testenv.Nix(t)
	goBin := testenv.Program(t, "go", "see https://go.dev/doc/install")
	root := testenv.RepoRoot(t)
	pkg, err := os.ReadFile(filepath.Join(root, "nix", "package.nix"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`vendorHash = "(sha256-[^"]+)"`).FindSubmatch(pkg)
	if m == nil {
		t.Fatal("nix/package.nix has no vendorHash")
	}
	vendor := filepath.Join(t.TempDir(), "vendor")
	cmd := exec.Command(goBin, "mod", "vendor", "-o", vendor)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod vendor: %v\n%s", err, out)
	}
	out, err := nixRun(t, n, "hash", "path", vendor)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != string(m[1]) {
		t.Errorf("vendorHash in nix/package.nix is %s, go mod vendor's output hashes to %s: update it", m[1], got)
	}
}
