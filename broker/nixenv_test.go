package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// devFlake is a flake with no inputs whose default devShell exports
// MCPX_DEV_VAR and a PATH entry of its own.
const devFlake = `{
  outputs = { self }: {
    devShells.SYSTEM.default = derivation {
      name = "dev"; system = "SYSTEM"; builder = "/bin/bash"; outputs = [ "out" ];
      MCPX_DEV_VAR = "VALUE"; PATH = "/opt/devtools/bin";
      args = [ "-c" "echo > $out" ];
    };
  };
}
`

// legacyShell is a shell.nix with no nixpkgs.
const legacyShell = `derivation {
  name = "legacy"; system = "SYSTEM"; builder = "/bin/bash"; outputs = [ "out" ];
  MCPX_LEGACY = "VALUE"; args = [ "-c" "echo > $out" ];
}
`

// TestNixEnvironment: a server's environment (a flake's devShell, a
// shell.nix) reaches its child under the server's own env, captured by
// the first spawn only: respawns run no nix. Status shows the environment
// per instance; a broken environment fails only its server, naming the
// field and carrying nix's message.
func TestNixEnvironment(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{
		"flake/flake.nix": strings.NewReplacer("SYSTEM", nx.System, "VALUE", "from-devshell").Replace(devFlake),
		"shell.nix":       strings.NewReplacer("SYSTEM", nx.System, "VALUE", "from-shell-nix").Replace(legacyShell),
		"empty/flake.nix": "{ outputs = { self }: { }; }",
	})
	bin, runs := nixCounter(t, nx.Bin)
	flakeEnv := "flake:path:" + filepath.Join(dir, "flake")
	shellEnv := "shell:" + filepath.Join(dir, "shell.nix")
	brokenEnv := "flake:path:" + filepath.Join(dir, "empty")
	cfg := nixConfig(t, map[string]string{"dev": "SELF", "legacy": "SELF", "broken": "SELF", "plain": "SELF"},
		map[string]map[string]any{
			"dev":    {"environment": flakeEnv, "env": map[string]string{"MCPX_OWN": "server", "NIX_STORE": "from-server"}},
			"legacy": {"environment": shellEnv},
			"broken": {"environment": brokenEnv},
		}, nil)
	b := nixBrokerConfig(t, newNixResolver(t, nx, t.TempDir(), bin), cfg)

	envOf := func(server, name string) string {
		return callText(t, b, req(server, ""), "env", `{"name":"`+name+`"}`)
	}
	if got := envOf("dev", "MCPX_DEV_VAR"); got != "from-devshell" {
		t.Fatalf("dev: MCPX_DEV_VAR = %q, want the devShell's", got)
	}
	if got := envOf("dev", "PATH"); !strings.HasPrefix(got, "/opt/devtools/bin:") || len(got) == len("/opt/devtools/bin:") {
		t.Errorf("dev: PATH = %q, want the devShell's before the host's", got)
	}
	if got := envOf("dev", "MCPX_OWN"); got != "server" {
		t.Errorf("dev: MCPX_OWN = %q, want the server's env", got)
	}
	// NIX_STORE is the devShell's too: the server's own env wins.
	if got := envOf("dev", "NIX_STORE"); got != "from-server" {
		t.Errorf("dev: NIX_STORE = %q, want the server's env over the devShell's", got)
	}
	if got := envOf("legacy", "MCPX_LEGACY"); got != "from-shell-nix" {
		t.Errorf("legacy: MCPX_LEGACY = %q, want the shell.nix's", got)
	}
	if runs() == 0 {
		t.Fatal("capturing two environments ran no nix")
	}
	captured := runs()
	for _, in := range b.Instances() {
		if in.Program == nil || in.Program.Environment == "" || in.Program.EnvRev == "" {
			t.Errorf("instance %s: program %+v, want its environment and its lock", in.ID, in.Program)
		}
		if err := b.StopInstance(t.Context(), in.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := envOf("dev", "MCPX_DEV_VAR"); got != "from-devshell" {
		t.Errorf("dev respawned: MCPX_DEV_VAR = %q", got)
	}
	if got := envOf("legacy", "MCPX_LEGACY"); got != "from-shell-nix" {
		t.Errorf("legacy respawned: MCPX_LEGACY = %q", got)
	}
	if n := runs() - captured; n != 0 {
		t.Errorf("respawns ran nix %d times, want none", n)
	}

	_, err := b.CallTool(t.Context(), req("broken", ""), "echo", json.RawMessage(`{"message":"x"}`), nil)
	var be *broker.Error
	if !errors.As(err, &be) || be.Kind != broker.KindChildFailed {
		t.Fatalf("call to a server whose environment fails: %v, want a child-failed error", err)
	}
	for _, want := range []string{`server "broken"`, "environment " + brokenEnv, "does not provide attribute"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got := callText(t, b, req("plain", ""), "echo", `{"message":"fine"}`); got != "fine" {
		t.Errorf("the plain server answered %q", got)
	}

	// The nix list shows each server with a nix environment, what it
	// captured (the lock, its variables) or that it has not, and no
	// server with neither a nix command nor a nix environment.
	ls := b.NixList()
	got := map[string]broker.NixServer{}
	for _, ns := range ls.Servers {
		got[ns.Server] = ns
	}
	if _, ok := got["plain"]; ok || len(got) != 3 {
		t.Errorf("nix list servers %v, want dev, legacy and broken", slices.Collect(maps.Keys(got)))
	}
	if d := got["dev"]; d.Environment != flakeEnv || !d.Captured || d.Env.Vars["MCPX_DEV_VAR"] != "from-devshell" || d.Env.Locked.NarHash == "" || d.Spec != "" {
		t.Errorf("dev in the nix list: %+v", d)
	}
	if l := got["legacy"]; l.Environment != shellEnv || !l.Captured || l.Env.FileHash == "" || l.Env.Vars["MCPX_LEGACY"] != "from-shell-nix" {
		t.Errorf("legacy in the nix list: %+v", l)
	}
	if br := got["broken"]; br.Environment != brokenEnv || br.Captured {
		t.Errorf("broken in the nix list: %+v, want its environment, not captured", br)
	}
	if len(ls.UnreferencedEnvironments) != 0 {
		t.Errorf("unreferenced environments %+v, want none", ls.UnreferencedEnvironments)
	}

	// `mcpx nix refresh` of a server with a nix environment captures it
	// again: unchanged, nothing is replaced; edited, the server's
	// instances are replaced and the next call sees the new variable.
	if _, err := b.NixRefresh(t.Context(), "plain"); !errors.As(err, &be) || be.Kind != broker.KindBadRequest {
		t.Errorf("refresh of a server with nothing of nix: %v, want a bad request", err)
	}
	res, err := b.NixRefresh(t.Context(), "dev")
	if err != nil || res.Environment != flakeEnv || res.EnvironmentChanged || len(res.Replaced) != 0 {
		t.Fatalf("refresh of an unchanged devShell: %+v, %v", res, err)
	}
	testenv.WriteFiles(t, dir, map[string]string{
		"flake/flake.nix": strings.NewReplacer("SYSTEM", nx.System, "VALUE", "edited").Replace(devFlake),
	})
	res, err = b.NixRefresh(t.Context(), "dev")
	if err != nil || !res.EnvironmentChanged || len(res.Replaced) != 1 || res.Replaced[0] != "dev" || res.Changed {
		t.Fatalf("refresh of an edited devShell: %+v, %v; want the environment changed and dev replaced", res, err)
	}
	testenv.WaitFor(t, "the edited devShell's variable", func() bool {
		return envOf("dev", "MCPX_DEV_VAR") == "edited"
	})

	// A server dropped from the config leaves its environment
	// unreferenced: listed as such, and what a GC drops.
	b.SetConfig(nixConfig(t, map[string]string{"dev": "SELF"},
		map[string]map[string]any{"dev": {"environment": flakeEnv}}, nil))
	ls = b.NixList()
	if len(ls.Servers) != 1 || len(ls.UnreferencedEnvironments) != 1 || ls.UnreferencedEnvironments[0].Environment != shellEnv {
		t.Errorf("after dropping legacy: servers %+v, unreferenced environments %+v, want dev and %s", ls.Servers, ls.UnreferencedEnvironments, shellEnv)
	}
	dropped, err := b.NixGC()
	if err != nil || len(dropped) != 1 || dropped[0].Spec != shellEnv {
		t.Errorf("nix gc dropped %+v, %v; want %s alone", dropped, err, shellEnv)
	}
	if ls := b.NixList(); len(ls.UnreferencedEnvironments) != 0 || !ls.Servers[0].Captured {
		t.Errorf("after the gc: %+v", ls)
	}
}

// TestNixStatus: each instance of a nix: server shows its spec, locked
// hash and store path; a server whose spec fails shows nix's message as
// its last error, and the others keep working.
func TestNixStatus(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	spec := nixDemo(t, nx, "git+file", "status")
	missing := strings.TrimSuffix(spec, "#demo") + "#nope"
	r := newNixResolver(t, nx, t.TempDir(), nx.Bin)
	b := nixBroker(t, r, map[string]string{"demo": spec, "broken": missing, "plain": "SELF"})
	callText(t, b, req("demo", ""), "echo", `{"message":"x"}`)
	callText(t, b, req("plain", ""), "echo", `{"message":"x"}`)
	if _, err := b.CallTool(t.Context(), req("broken", ""), "echo", json.RawMessage(`{}`), nil); err == nil {
		t.Fatal("a call to the broken server succeeded")
	}
	want, ok := r.Cached(spec)
	if !ok {
		t.Fatal("the spec is not cached after its first call")
	}
	seen := map[string]bool{}
	for _, in := range b.Instances() {
		seen[in.Server] = true
		switch in.Server {
		case "demo":
			p := in.Program
			if p == nil || p.Spec != spec || p.StorePath != want.StorePath || p.Rev != want.Locked.Rev || p.Rev == "" || p.NarHash == "" || p.Pinned {
				t.Errorf("demo's program %+v, want spec %s, rev %s, store path %s, floating", p, spec, want.Locked.Rev, want.StorePath)
			}
		case "plain":
			if in.Program != nil {
				t.Errorf("plain's program %+v, want none", in.Program)
			}
		case "broken":
			if !strings.Contains(in.LastError, "does not provide attribute") || !strings.Contains(in.LastError, missing) {
				t.Errorf("broken's last error %q, want nix's message naming the spec", in.LastError)
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("instances of %v, want demo, broken and plain", seen)
	}
}

// syncBuffer is a log sink tests read while the broker writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// TestNixRefreshPolicy: with nix.refresh "on-reload" a config reload, and
// with an interval a tick, moves an edited flake's servers to the new
// store path through the drain; a refresh that fails keeps the old program
// and is logged once, not once per pass.
func TestNixRefreshPolicy(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	for _, policy := range []string{"on-reload", "1s"} {
		t.Run(policy, func(t *testing.T) {
			spec := nixDemo(t, nx, "path", "v1")
			cfg := nixConfig(t, map[string]string{"demo": spec}, nil, map[string]any{"refresh": policy})
			logs := &syncBuffer{}
			b, err := broker.New(broker.Options{Config: cfg, ReapInterval: -1, Nix: newNixResolver(t, nx, t.TempDir(), nx.Bin),
				Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				b.Close(ctx)
			})
			marker := `{"name":"MCPX_NIX_WRAPPED"}`
			if got := callText(t, b, req("demo", ""), "env", marker); got != "v1" {
				t.Fatalf("MCPX_NIX_WRAPPED = %q, want v1", got)
			}
			poke := func() {
				if policy == "on-reload" {
					b.SetConfig(nixConfig(t, map[string]string{"demo": spec}, nil, map[string]any{"refresh": policy}))
				}
			}
			// waitFor polls until cond holds, poking a reload each round.
			waitFor := func(what string, cond func() bool) {
				t.Helper()
				deadline := time.Now().Add(60 * time.Second)
				for i := 0; !cond(); i++ {
					if i >= 600 || time.Now().After(deadline) {
						t.Fatalf("%s: not within 600 rounds or 60s", what)
					}
					poke()
					time.Sleep(100 * time.Millisecond)
				}
			}
			retag(t, spec, "v2")
			waitFor("the edited flake's program", func() bool {
				return callText(t, b, req("demo", ""), "env", marker) == "v2"
			})

			dir := strings.TrimSuffix(strings.TrimPrefix(spec, "nix:path:"), "#demo")
			testenv.WriteFiles(t, dir, map[string]string{"flake.nix": "{ outputs = { self }: { ; }"})
			passes := logs.count("nix refresh pass")
			waitFor("three failed passes", func() bool { return logs.count("nix refresh pass") >= passes+3 })
			if n := logs.count("nix refresh failed"); n != 1 {
				t.Errorf("a refresh failing the same way thrice was logged %d times, want once", n)
			}
			if got := callText(t, b, req("demo", ""), "env", marker); got != "v2" {
				t.Errorf("after failed refreshes: MCPX_NIX_WRAPPED = %q, want v2 kept", got)
			}
		})
	}
}
