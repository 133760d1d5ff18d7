package broker_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// isolatedFlake is a flake with no inputs: mcp-tool's bin/mcp-tool starts
// this test binary as the demo server, other's bin/other is a second
// program.
const isolatedFlake = `{
  outputs = { self }: let
    system = "SYSTEM";
    mk = name: bin: line: derivation {
      inherit name system line;
      builder = "/bin/sh";
      args = [ "-c" "/bin/mkdir -p $out/bin && printf '#!/bin/sh\\n%s\\n' \"$line\" > $out/bin/${bin} && /bin/chmod +x $out/bin/${bin}" ];
    };
  in {
    packages.${system} = {
      mcp-tool = mk "mcp-tool-1" "mcp-tool" "exec SELF \"$@\"";
      other = mk "other-1" "other" "echo other";
    };
  };
}
`

// TestNixEnvironmentIsolated: an isolated server runs in an environment
// holding only its declared packages: its command, a bare name, is found
// there; its PATH is that environment's bin and nothing of the daemon's;
// a program on the daemon's PATH (which a host server runs) is not found,
// and the error names the server, the command and the field to fix.
// Respawns run no nix.
func TestNixEnvironmentIsolated(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, hostBin := t.TempDir(), t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{
		"flake.nix": strings.NewReplacer("SYSTEM", nx.System, "SELF", self).Replace(isolatedFlake),
	})
	if err := os.WriteFile(filepath.Join(hostBin, "hosttool"), []byte("#!/bin/sh\nexec "+self+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", hostBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	deps := []string{"nix:path:" + dir + "#mcp-tool", "nix:path:" + dir + "#other"}
	bin, runs := nixCounter(t, nx.Bin)
	cfg := nixConfig(t, map[string]string{"iso": "mcp-tool", "host": "hosttool", "isohost": "hosttool"},
		map[string]map[string]any{
			"iso":     {"environment": "isolated", "dependencies": deps},
			"isohost": {"environment": "isolated", "dependencies": deps},
		}, nil)
	b := nixBrokerConfig(t, newNixResolver(t, nx, t.TempDir(), bin), cfg)

	if got := callText(t, b, req("iso", ""), "echo", `{"message":"isolated"}`); got != "isolated" {
		t.Fatalf("the isolated server answered %q", got)
	}
	path := callText(t, b, req("iso", ""), "env", `{"name":"PATH"}`)
	if strings.Contains(path, string(os.PathListSeparator)) || !strings.HasPrefix(path, "/nix/store/") || !strings.HasSuffix(path, "/bin") {
		t.Errorf("the isolated child's PATH is %q, want its environment's bin alone", path)
	}
	for name, want := range map[string]bool{"mcp-tool": true, "other": true, "hosttool": false} {
		if _, err := os.Stat(filepath.Join(path, name)); (err == nil) != want {
			t.Errorf("%s in the isolated PATH: %v, want present=%v", name, err, want)
		}
	}
	if got := callText(t, b, req("host", ""), "echo", `{"message":"host"}`); got != "host" {
		t.Fatalf("the host server (hosttool on the daemon's PATH) answered %q", got)
	}
	_, err = b.CallTool(t.Context(), req("isohost", ""), "echo", json.RawMessage(`{"message":"x"}`), nil)
	var be *broker.Error
	if !errors.As(err, &be) || be.Kind != broker.KindChildFailed {
		t.Fatalf("an isolated server whose command is the host's: %v, want a child-failed error", err)
	}
	for _, want := range []string{`server "isohost"`, `command "hosttool" is not in the isolated environment`, "dependencies"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	built := runs()
	for _, in := range b.Instances() {
		if in.Server == "iso" {
			if in.Program == nil || !strings.HasPrefix(in.Program.Environment, "isolated:") || in.Program.EnvRev == "" {
				t.Errorf("iso's program %+v, want its isolated environment and its lock", in.Program)
			}
			if err := b.StopInstance(t.Context(), in.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := callText(t, b, req("iso", ""), "env", `{"name":"PATH"}`); got != path {
		t.Errorf("respawned: PATH %q, want %q", got, path)
	}
	if n := runs() - built; n != 0 {
		t.Errorf("a respawn ran nix %d times, want none", n)
	}
}
