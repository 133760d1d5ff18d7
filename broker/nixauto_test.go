package broker_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestNixEnvironmentAuto: a server's "environment": "auto" runs each child
// in the flake.nix (else the shell.nix) of its working directory (here the
// instance root of a cwd-scoped server), else on the host; a flake.nix
// others may write fails the start naming the file, with nothing run. The
// environments captured for instances survive `mcpx nix gc`.
func TestNixEnvironmentAuto(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{
		"withflake/flake.nix": strings.NewReplacer("SYSTEM", nx.System, "VALUE", "auto-flake").Replace(devFlake),
		"withshell/shell.nix": strings.NewReplacer("SYSTEM", nx.System, "VALUE", "auto-shell").Replace(legacyShell),
		"plain/README":        "no shell here\n",
		"open/flake.nix":      strings.NewReplacer("SYSTEM", nx.System, "VALUE", "open").Replace(devFlake),
	})
	if err := os.Chmod(filepath.Join(dir, "open", "flake.nix"), 0o666); err != nil {
		t.Fatal(err)
	}
	bin, runs := nixCounter(t, nx.Bin)
	cfg := nixConfig(t, map[string]string{"proj": "SELF"},
		map[string]map[string]any{"proj": {"environment": "auto", "scope": "cwd"}}, nil)
	b := nixBrokerConfig(t, newNixResolver(t, nx, t.TempDir(), bin), cfg)
	envIn := func(sub, name string) string {
		return callText(t, b, req("proj", filepath.Join(dir, sub)), "env", `{"name":"`+name+`"}`)
	}

	if got := envIn("withflake", "MCPX_DEV_VAR"); got != "auto-flake" {
		t.Errorf("in a directory with a flake.nix: MCPX_DEV_VAR = %q, want its devShell's", got)
	}
	if got := envIn("withflake", "PATH"); !strings.HasPrefix(got, "/opt/devtools/bin:") {
		t.Errorf("in a directory with a flake.nix: PATH = %q, want the devShell's first", got)
	}
	if got := envIn("withshell", "MCPX_LEGACY"); got != "auto-shell" {
		t.Errorf("in a directory with a shell.nix: MCPX_LEGACY = %q, want its shell's", got)
	}
	captured := runs()
	if got := envIn("plain", "MCPX_DEV_VAR") + envIn("plain", "MCPX_LEGACY"); got != "" {
		t.Errorf("in a directory with neither: got %q, want the host's environment", got)
	}
	if runs() != captured {
		t.Errorf("a directory with no shell ran nix %d times", runs()-captured)
	}
	_, err := b.CallTool(t.Context(), req("proj", filepath.Join(dir, "open")), "env", json.RawMessage(`{"name":"MCPX_DEV_VAR"}`), nil)
	if err == nil {
		t.Fatal("a call in a directory whose flake.nix others may write succeeded")
	}
	for _, want := range []string{filepath.Join(dir, "open", "flake.nix"), "other users may write"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if runs() != captured {
		t.Errorf("an untrusted flake.nix ran nix")
	}
	var envs []string
	for _, in := range b.Instances() {
		if in.Program != nil && in.Program.Environment != "" {
			envs = append(envs, in.Program.Environment)
		}
	}
	if want := "flake:path:" + filepath.Join(dir, "withflake"); !strings.Contains(strings.Join(envs, " "), want) {
		t.Errorf("instances' environments %v, want %s among them", envs, want)
	}

	// A gc keeps what running instances use: a respawn runs no nix.
	if _, err := b.NixGC(); err != nil {
		t.Fatal(err)
	}
	for _, in := range b.Instances() {
		if err := b.StopInstance(t.Context(), in.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := envIn("withflake", "MCPX_DEV_VAR"); got != "auto-flake" {
		t.Errorf("respawned: MCPX_DEV_VAR = %q", got)
	}
	if runs() != captured {
		t.Errorf("a respawn after nix gc ran nix %d times, want none", runs()-captured)
	}

	// `mcpx nix refresh` captures its instances' environments again.
	testenv.WriteFiles(t, dir, map[string]string{
		"withflake/flake.nix": strings.NewReplacer("SYSTEM", nx.System, "VALUE", "edited").Replace(devFlake),
	})
	res, err := b.NixRefresh(t.Context(), "proj")
	if err != nil || !res.EnvironmentChanged || len(res.Replaced) != 1 {
		t.Fatalf("refresh of an auto server after its flake.nix was edited: %+v, %v", res, err)
	}
	testenv.WaitFor(t, "the edited devShell's variable", func() bool {
		return envIn("withflake", "MCPX_DEV_VAR") == "edited"
	})
}
