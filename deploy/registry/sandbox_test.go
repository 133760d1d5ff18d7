package registry_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/deploy/registry"
	"mcpx.dev/mcpx/internal/testing/npmtest"
	"mcpx.dev/mcpx/internal/testing/registrytest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// owner is the daemon's owner: its children are confined only when the
// config says so.
var owner = broker.Caller{Name: "local:owner", Via: "unix", Local: true, Owner: true, Rights: rights.All()}

// TestNPMEntryRunsConfined: an npm server `mcpx registry add` installed
// runs confined by the "sandbox" its entry says (for the owner too): it
// reads its own package in the state directory and may write neither it,
// nor the rest of the state directory, nor the npm cache it was installed
// through.
func TestNPMEntryRunsConfined(t *testing.T) {
	testenv.Node(t)
	spec := &confine.Spec{Why: confine.WhyConfig, Limits: confine.DefaultLimits}
	p := spec.Policy(confine.Facts{TmpDir: t.TempDir()})
	if _, err := sandbox.Plan(&p, sandbox.Probe()); err != nil {
		if os.Getenv(testenv.RequireDepsEnv) == "1" {
			t.Fatalf("this kernel cannot confine a child: %v", err)
		}
		t.Skipf("this kernel cannot confine a child: %v", err)
	}
	cache := t.TempDir()
	t.Setenv("npm_config_cache", cache) // the npm cache, of npm install and of the daemon's environment
	npm := npmtest.Start(t, npmtest.ProbePackage("mcpx-probe", "1.0.0"))
	reg := registrytest.New(t, registrytest.Server{Latest: true, JSON: `{
		"name": "io.example/probe", "description": "A probe", "version": "1.0.0",
		"packages": [{"registryType": "npm", "registryBaseUrl": "` + npm.URL + `", "identifier": "mcpx-probe", "version": "1.0.0", "transport": {"type": "stdio"}}]
	}`})
	state, path := t.TempDir(), filepath.Join(t.TempDir(), "config.json")
	if _, err := registry.Add(t.Context(), registry.AddOptions{Client: client(reg.URL), Name: "io.example/probe", Config: path, StateDir: state}); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(cache); len(ents) == 0 {
		t.Fatalf("npm install left nothing in the npm cache %s: the test would not say it is guarded", cache)
	}
	k := sandbox.Probe()
	w := testenv.WatchConfined(t, k.Memory.Dir, k.Pids.Dir) // its check after the broker's Close
	b := brokerOf(t, path)
	cwd := t.TempDir()
	call := func(tool, args string) (string, bool) {
		t.Helper()
		res, err := b.CallTool(t.Context(), broker.Request{Caller: owner, Server: "probe", Context: broker.CallContext{Cwd: cwd}}, tool, json.RawMessage(args), nil)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var out struct {
			Content []struct{ Text string }
			IsError bool
		}
		if err := json.Unmarshal(res, &out); err != nil || len(out.Content) != 1 {
			t.Fatalf("%s: %s", tool, res)
		}
		return out.Content[0].Text, out.IsError
	}
	self, _ := call("self", `{}`)
	pkg := filepath.Dir(self)
	if !strings.HasPrefix(pkg, registry.NPMDir(state, "mcpx-probe", "1.0.0")) {
		t.Fatalf("the server runs from %s, not its package in the state directory", self)
	}
	if got, isErr := call("read", `{"path": "`+filepath.Join(pkg, "package.json")+`"}`); isErr || !strings.Contains(got, `"mcpx-probe"`) {
		t.Errorf("reading its own package: %q (error %v)", got, isErr)
	}
	for what, c := range map[string]struct{ tool, path string }{
		"write its package":        {"write", filepath.Join(pkg, "planted.js")},
		"write the npm cache":      {"write", filepath.Join(cache, "planted")},
		"list the npm cache":       {"list", cache},
		"list the state directory": {"list", state},
	} {
		args, _ := json.Marshal(map[string]string{"path": c.path, "text": "x"})
		if c.tool == "list" {
			args, _ = json.Marshal(map[string]string{"path": c.path})
		}
		if got, isErr := call(c.tool, string(args)); !isErr || !strings.Contains(got, "EACCES") {
			t.Errorf("%s: %q (error %v), want EACCES", what, got, isErr)
		}
	}
	for _, p := range []string{filepath.Join(pkg, "planted.js"), filepath.Join(cache, "planted")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the confined server wrote %s", p)
		}
	}
	in := b.Instances()
	if len(in) != 1 || in[0].Sandbox == nil || in[0].Sandbox.Why != confine.WhyConfig {
		t.Fatalf("instances %+v, want one, confined by its config", in)
	}
	w.Note(in[0].Pid)
}
