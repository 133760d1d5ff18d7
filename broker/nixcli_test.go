package broker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestNixCLICommand: a cli tool whose program is a nix: spec runs the
// flake's program, resolved on its first call and cached: later calls run
// no nix. A spec that fails is an error result naming the tool and
// carrying nix's message; the server's other tools work.
func TestNixCLICommand(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{
		"flake.nix": strings.ReplaceAll(demoFlake, "SYSTEM", nx.System),
		"demo.sh":   "#!/bin/sh\necho \"from the flake: $*\"\n",
	})
	spec := "nix:path:" + dir + "#demo"
	doc := map[string]any{"servers": map[string]any{"tools": map[string]any{"scope": "global", "cli": map[string]any{"tools": map[string]any{
		"hello":  map[string]any{"args": []string{spec, "{who}"}},
		"broken": map[string]any{"args": []string{"nix:path:" + dir + "#nosuch"}},
		"plain":  map[string]any{"args": []string{"/bin/echo", "plain"}},
	}}}}}
	data, _ := json.Marshal(doc)
	cfg, err := config.Parse(data, "test.json")
	if err != nil {
		t.Fatal(err)
	}
	bin, runs := nixCounter(t, nx.Bin)
	b := nixBrokerConfig(t, newNixResolver(t, nx, t.TempDir(), bin), cfg)
	if got := callText(t, b, req("tools", dir), "hello", `{"who":"Ada"}`); got != "from the flake: Ada\n" {
		t.Fatalf("hello answered %q, want the flake's program's output", got)
	}
	ran := runs()
	if got := callText(t, b, req("tools", dir), "hello", `{"who":"Bo"}`); got != "from the flake: Bo\n" {
		t.Errorf("hello again answered %q", got)
	}
	if runs() != ran {
		t.Errorf("a second call ran nix %d times, want none", runs()-ran)
	}
	res, err := b.CallTool(t.Context(), req("tools", dir), "broken", json.RawMessage(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(res); !strings.Contains(s, `"isError":true`) || !strings.Contains(s, "does not provide attribute") || !strings.Contains(s, "broken") {
		t.Errorf("broken answered %s, want an error result naming the tool with nix's message", s)
	}
	if got := callText(t, b, req("tools", dir), "plain", `{}`); got != "plain\n" {
		t.Errorf("plain answered %q", got)
	}
}
