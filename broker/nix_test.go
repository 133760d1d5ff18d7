package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/nixresolve"
)

// demoFlake is a flake with no inputs whose package demo wraps this test
// binary as the demo server; the wrapper marks the child with
// MCPX_NIX_WRAPPED so a test can tell the store path ran.
const demoFlake = `{
  outputs = { self }: {
    packages.SYSTEM.demo = derivation {
      name = "mcp-demo-1.0"; system = "SYSTEM"; builder = "/bin/sh";
      script = builtins.readFile ./demo.sh;
      args = [ "-c" ''/bin/mkdir -p $out/bin && printf '%s\n' "$script" > $out/bin/demo && /bin/chmod +x $out/bin/demo'' ];
    } // { meta.mainProgram = "demo"; };
  };
}
`

// nixDemo writes the demo flake to a new directory (a git repository for
// git+file) and returns its nix:<ref>#demo spec.
func nixDemo(t testing.TB, nx testenv.NixSetup, kind, tag string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{
		"flake.nix": strings.ReplaceAll(demoFlake, "SYSTEM", nx.System),
		"demo.sh":   "#!/bin/sh\nMCPX_NIX_WRAPPED=" + tag + " " + demo.EnvServer + "=1 exec " + strconv.Quote(self) + " \"$@\"\n",
	})
	if kind == "git+file" {
		testenv.RunGit(t, dir, "init", "-q")
		testenv.RunGit(t, dir, "add", ".")
		testenv.RunGit(t, dir, "commit", "-q", "-m", "flake")
		return "nix:git+file://" + dir + "#demo"
	}
	return "nix:path:" + dir + "#demo"
}

// nixCounter is a nix wrapper that counts its runs in a file.
func nixCounter(t testing.TB, real string) (bin string, runs func() int) {
	t.Helper()
	dir := t.TempDir()
	bin, log := filepath.Join(dir, "nix"), filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho run >> " + strconv.Quote(log) + "\nexec " + strconv.Quote(real) + " \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, func() int {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), "run\n")
	}
}

func newNixResolver(t testing.TB, nx testenv.NixSetup, cache, bin string) *nixresolve.Resolver {
	t.Helper()
	r, err := nixresolve.New(nixresolve.Options{CacheDir: cache, Binary: bin, Config: nx.Config, Env: nx.Env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// nixBroker serves servers (name -> command) with global scope through r.
func nixBroker(t testing.TB, r *nixresolve.Resolver, servers map[string]string) *broker.Broker {
	t.Helper()
	return nixBrokerConfig(t, r, nixConfig(t, servers, nil, nil))
}

// nixConfig is the config of nixBroker: servers (name -> command, SELF
// for this test binary as the demo server), each with the fields of
// extra[name] added, and the nix section nix.
func nixConfig(t testing.TB, servers map[string]string, extra map[string]map[string]any, nix map[string]any) *config.Config {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfgServers := map[string]any{}
	for name, cmd := range servers {
		s := map[string]any{
			"command": strings.ReplaceAll(cmd, "SELF", self),
			"env":     map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)},
			"scope":   "global",
		}
		for k, v := range extra[name] {
			if env, ok := v.(map[string]string); ok && k == "env" {
				for ek, ev := range env {
					s["env"].(map[string]string)[ek] = ev
				}
				continue
			}
			s[k] = v
		}
		cfgServers[name] = s
	}
	doc := map[string]any{"servers": cfgServers}
	if nix != nil {
		doc["nix"] = nix
	}
	data, _ := json.Marshal(doc)
	cfg, err := config.Parse(data, "test.json")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func nixBrokerConfig(t testing.TB, r *nixresolve.Resolver, cfg *config.Config) *broker.Broker {
	t.Helper()
	b, err := broker.New(broker.Options{Config: cfg, ReapInterval: -1, Nix: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		b.Close(ctx)
	})
	return b
}

// TestNixCommand: a server whose command is nix:<ref>#demo runs the
// resolved store path; its restarts, and a new daemon on the same cache,
// spawn it with no nix process.
func TestNixCommand(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	for _, kind := range []string{"path", "git+file"} {
		t.Run(kind, func(t *testing.T) {
			tag := "wrapped-" + strings.ReplaceAll(kind, "+", "-")
			spec := nixDemo(t, nx, kind, tag)
			bin, runs := nixCounter(t, nx.Bin)
			cache := t.TempDir()
			b := nixBroker(t, newNixResolver(t, nx, cache, bin), map[string]string{"demo": spec})
			r := req("demo", "")
			if got := callText(t, b, r, "env", `{"name":"MCPX_NIX_WRAPPED"}`); got != tag {
				t.Fatalf("the child's MCPX_NIX_WRAPPED = %q, want %q: not the store path's program", got, tag)
			}
			if runs() == 0 {
				t.Fatal("the first spawn ran no nix")
			}
			resolved := runs()
			for i := range 2 {
				in := b.Instances()
				if len(in) != 1 {
					t.Fatalf("instances %+v, want one", in)
				}
				if err := b.StopInstance(t.Context(), in[0].ID); err != nil {
					t.Fatal(err)
				}
				if got := callText(t, b, r, "env", `{"name":"MCPX_NIX_WRAPPED"}`); got != tag {
					t.Fatalf("respawn %d: MCPX_NIX_WRAPPED = %q, want %q", i, got, tag)
				}
			}
			// A daemon restart: a new resolver and broker on the same cache.
			b2 := nixBroker(t, newNixResolver(t, nx, cache, bin), map[string]string{"demo": spec})
			if got := callText(t, b2, r, "echo", `{"message":"again"}`); got != "again" {
				t.Fatalf("after a restart: echo = %q", got)
			}
			if n := runs() - resolved; n != 0 {
				t.Errorf("respawns and a restart ran nix %d times, want none", n)
			}
		})
	}
}

// TestNixCommandErrors: a spec that does not resolve fails its server's
// calls with an error naming the server, the spec and nix's message; the
// other servers keep working, and nothing falls back to PATH.
func TestNixCommandErrors(t *testing.T) {
	nx := testenv.Nix(t)
	proctest.CheckNoLeaks(t)
	spec := nixDemo(t, nx, "path", "errors")
	missing := strings.TrimSuffix(spec, "#demo") + "#nope"
	b := nixBroker(t, newNixResolver(t, nx, t.TempDir(), nx.Bin), map[string]string{"broken": missing, "plain": "SELF"})
	_, err := b.CallTool(t.Context(), req("broken", ""), "echo", json.RawMessage(`{"message":"x"}`), nil)
	var be *broker.Error
	if !errors.As(err, &be) || be.Kind != broker.KindChildFailed {
		t.Fatalf("call to a server whose spec fails: %v, want a child-failed broker error", err)
	}
	for _, want := range []string{`server "broken"`, "command " + missing, "does not provide attribute"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	t.Logf("error: %v", err)
	if got := callText(t, b, req("plain", ""), "echo", `{"message":"fine"}`); got != "fine" {
		t.Errorf("the plain server answered %q", got)
	}

	// Without nix on the broker machine, the error says so.
	noNix := nixBroker(t, newNixResolver(t, nx, t.TempDir(), filepath.Join(t.TempDir(), "nix")), map[string]string{"gopls": spec})
	_, err = noNix.CallTool(t.Context(), req("gopls", ""), "echo", json.RawMessage(`{"message":"x"}`), nil)
	if err == nil || !strings.Contains(err.Error(), `server "gopls"`) || !strings.Contains(err.Error(), "command "+spec+": needs Nix on the broker machine") {
		t.Errorf("without nix: %v", err)
	}
}

// BenchmarkSpawnToFirstCall: a new child and its first call, for a cached
// nix: spec (a store path, through a /bin/sh wrapper), the plain command
// it wraps, the plain command in a cached devShell environment, and the
// naive launcher: `nix run <ref>#demo` on every start; in the same run.
func BenchmarkSpawnToFirstCall(b *testing.B) {
	nx := testenv.Nix(b)
	spec := nixDemo(b, nx, "path", "bench")
	dev := b.TempDir()
	testenv.WriteFiles(b, dev, map[string]string{
		"flake.nix": strings.NewReplacer("SYSTEM", nx.System, "VALUE", "bench").Replace(devFlake),
	})
	r := newNixResolver(b, nx, b.TempDir(), nx.Bin)
	if _, err := r.Resolve(b.Context(), spec); err != nil {
		b.Fatal(err)
	}
	if _, err := r.Environment(b.Context(), "flake:path:"+dev); err != nil {
		b.Fatal(err)
	}
	nixEnv := map[string]string{"NIX_CONFIG": strings.Join(nx.Config, "\n")}
	for _, kv := range nx.Env {
		if v, ok := strings.CutPrefix(kv, "XDG_CACHE_HOME="); ok {
			nixEnv["XDG_CACHE_HOME"] = v
		}
	}
	for _, bc := range []struct {
		name, cmd string
		extra     map[string]any
	}{
		{"nix-cached", spec, nil},
		{"plain", "SELF", nil},
		{"devshell-cached", "SELF", map[string]any{"environment": "flake:path:" + dev}},
		{"nix-run-per-start", nx.Bin, map[string]any{"args": []string{"run", strings.TrimPrefix(spec, "nix:")}, "env": nixEnv}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			br := nixBrokerConfig(b, r, nixConfig(b, map[string]string{"demo": bc.cmd}, map[string]map[string]any{"demo": bc.extra}, nil))
			args := json.RawMessage(`{"message":"x"}`)
			for b.Loop() {
				if _, err := br.CallTool(b.Context(), req("demo", ""), "echo", args, nil); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, in := range br.Instances() {
					if err := br.StopInstance(b.Context(), in.ID); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
		})
	}
}

// TestNixTimeoutIsATimeout: a nix: command whose resolution runs out of
// nix.timeout fails the call as a timeout (504), naming the key to raise,
// not as a failed child. (The one fake nix of this file: a hung nix cannot
// be had from the real one on demand.)
func TestNixTimeoutIsATimeout(t *testing.T) {
	proctest.CheckNoLeaks(t)
	bin := filepath.Join(t.TempDir(), "nix")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := nixresolve.New(nixresolve.Options{CacheDir: t.TempDir(), Binary: bin, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	b := nixBroker(t, r, map[string]string{"slow": "nix:path:/nowhere#demo"})
	_, err = b.CallTool(t.Context(), broker.Request{Caller: local, Server: "slow"}, "echo", json.RawMessage(`{"message":"hi"}`), nil)
	var be *broker.Error
	if !errors.As(err, &be) || be.Kind != broker.KindTimeout || !strings.Contains(be.Error(), "nix.timeout") {
		t.Fatalf("call = %v, want a timeout naming nix.timeout", err)
	}
}
