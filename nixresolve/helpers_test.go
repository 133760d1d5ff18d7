package nixresolve_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/nixresolve"
)

// flakeNix is a flake with no inputs (nixpkgs cannot be fetched here): every
// package is a derivation built by /bin/sh. demo's program is demo.sh.
const flakeNix = `{
  outputs = { self }: let
    system = "SYSTEM";
    mk = name: bin: script: derivation {
      inherit name system script;
      builder = "/bin/sh";
      args = [ "-c" ''/bin/mkdir -p $out/bin && printf '%s\n' "$script" > $out/bin/${bin} && /bin/chmod +x $out/bin/${bin}'' ];
    };
  in {
    packages.${system} = {
      demo = mk "mcp-demo-1.0" "demo" (builtins.readFile ./demo.sh) // { meta.mainProgram = "demo"; };
      plain = mk "plain-2.0" "plain" (builtins.readFile ./demo.sh);
      default = self.packages.${system}.plain;
      nobin = mk "nobin-1.0" "other" "#!/bin/sh";
      bad = derivation {
        name = "bad"; inherit system; builder = "/bin/sh";
        args = [ "-c" "echo compiling; echo 'fatal: no compiler here' >&2; exit 3" ];
      };
      evalerr = throw "kaputt: this package is broken";
    };
  };
}
`

// writeFlake writes the test flake to dir with script as demo.sh.
func writeFlake(t *testing.T, nx testenv.NixSetup, dir, script string) {
	writeFlakeB(t, nx, dir, script)
}

func writeFlakeB(t testing.TB, nx testenv.NixSetup, dir, script string) {
	t.Helper()
	testenv.WriteFiles(t, dir, map[string]string{
		"flake.nix": strings.ReplaceAll(flakeNix, "SYSTEM", nx.System),
		"demo.sh":   script,
	})
}

// echoScript prints tag and its arguments.
func echoScript(tag string) string { return "#!/bin/sh\necho " + tag + " \"$@\"\n" }

// counter is a nix wrapper that logs each invocation's subcommand to a file
// before running the real nix: it proves which resolutions ran no nix.
type counter struct{ bin, log string }

func newCounter(t *testing.T, real string) counter {
	t.Helper()
	dir := t.TempDir()
	c := counter{bin: filepath.Join(dir, "nix"), log: filepath.Join(dir, "calls")}
	script := "#!/bin/sh\necho \"$1 $2\" >> " + strconv.Quote(c.log) + "\nexec " + strconv.Quote(real) + " \"$@\"\n"
	if err := os.WriteFile(c.bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return c
}

// calls lists the subcommands run so far ("flake metadata", "eval --json", ...).
func (c counter) calls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(c.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(data)), " ", "_"))
}

// newResolver returns a resolver over cacheDir running bin (the real nix
// when ""), with the test's nix settings, closed at cleanup.
func newResolverB(b *testing.B, nx testenv.NixSetup) *nixresolve.Resolver {
	r, err := nixresolve.New(nixresolve.Options{CacheDir: b.TempDir(), Binary: nx.Bin, Config: nx.Config, Env: nx.Env})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

func newResolver(t *testing.T, nx testenv.NixSetup, cacheDir, bin string, edit ...func(*nixresolve.Options)) *nixresolve.Resolver {
	t.Helper()
	opts := nixresolve.Options{CacheDir: cacheDir, Binary: bin, Config: nx.Config, Env: nx.Env}
	if bin == "" {
		opts.Binary = nx.Bin
	}
	for _, e := range edit {
		e(&opts)
	}
	r, err := nixresolve.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// runProgram runs path with args and returns its trimmed stdout.
func runProgram(t *testing.T, path string, args ...string) string {
	t.Helper()
	out, err := exec.Command(path, args...).Output()
	if err != nil {
		t.Fatalf("running %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}

// nixCmd runs the real nix with the test's settings and returns its
// combined output and error.
func nixCmd(nx testenv.NixSetup, args ...string) (string, error) {
	cmd := exec.Command(nx.Bin, args...)
	cmd.Env = nx.CmdEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}
