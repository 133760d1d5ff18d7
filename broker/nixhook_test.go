package broker_test

import (
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// hookFlake is a devShell whose shellHook exports a variable made of one
// of the shell's and the directory it runs in, and prints a greeting, as
// hooks do.
const hookFlake = `{
  outputs = { self }: {
    devShells.SYSTEM.default = derivation {
      name = "dev"; system = "SYSTEM"; builder = "/bin/bash"; outputs = [ "out" ];
      MCPX_DEV_VAR = "VALUE"; PATH = "/opt/devtools/bin";
      shellHook = ''
        export MCPX_HOOKED="hook:$MCPX_DEV_VAR:$PWD"
        echo "welcome to the dev shell"
        read -r line || true
      '';
      args = [ "-c" "echo > $out" ];
    };
  };
}
`

// TestNixEnvironmentShellHook: a devShell's shellHook runs before the
// server's command, in its working directory, as nix develop -c runs it:
// what it exports reaches the child. What it prints goes to stderr and it
// reads no stdin, so the MCP stream is untouched. It runs at each spawn;
// nix runs once.
func TestNixEnvironmentShellHook(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{
		"flake/flake.nix": strings.NewReplacer("SYSTEM", nx.System, "VALUE", "hooked").Replace(hookFlake),
		"work/README":     "the server's cwd\n",
	})
	work := filepath.Join(dir, "work")
	bin, runs := nixCounter(t, nx.Bin)
	cfg := nixConfig(t, map[string]string{"dev": "SELF"},
		map[string]map[string]any{"dev": {"environment": "flake:path:" + filepath.Join(dir, "flake"), "cwd": work}}, nil)
	b := nixBrokerConfig(t, newNixResolver(t, nx, t.TempDir(), bin), cfg)
	want := "hook:hooked:" + work
	if got := callText(t, b, req("dev", ""), "env", `{"name":"MCPX_HOOKED"}`); got != want {
		t.Fatalf("MCPX_HOOKED = %q, want %q: the shellHook ran before the command", got, want)
	}
	if got := callText(t, b, req("dev", ""), "echo", `{"message":"still speaking MCP"}`); got != "still speaking MCP" {
		t.Errorf("echo answered %q", got)
	}
	ran := runs()
	for _, in := range b.Instances() {
		if err := b.StopInstance(t.Context(), in.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := callText(t, b, req("dev", ""), "env", `{"name":"MCPX_HOOKED"}`); got != want {
		t.Errorf("respawned: MCPX_HOOKED = %q, want %q", got, want)
	}
	if runs() != ran {
		t.Errorf("a respawn ran nix %d times, want none", runs()-ran)
	}
}
