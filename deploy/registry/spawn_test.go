package registry_test

// The entries Add writes, run by a real broker: server-everything installed
// from npm once and started twice with no npm process; a remote answering
// through the broker; pypi and oci entries refused at spawn, naming the
// missing launcher.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/deploy/registry"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/registrytest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

var localCaller = broker.Caller{Name: "local:test", Via: "unix", Local: true, Rights: rights.Rights{{Admin: true}}}

// brokerOf starts a broker over the config file at path, each server's
// children marked for the leak check, and closes it at cleanup.
func brokerOf(t *testing.T, path string) *broker.Broker {
	t.Helper()
	proctest.CheckNoLeaks(t)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cfg.Servers {
		if s.Command != "" {
			if s.Env == nil {
				s.Env = map[string]string{}
			}
			s.Env[proctest.MarkerEnv] = proctest.Marker(t)
		}
	}
	b, err := broker.New(broker.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

func toolNames(t *testing.T, b *broker.Broker, server string) []string {
	t.Helper()
	raw, err := b.Tools(t.Context(), broker.Request{Caller: localCaller, Server: server, Context: broker.CallContext{Cwd: t.TempDir()}})
	if err != nil {
		t.Fatalf("tools of %s: %v", server, err)
	}
	var tools []struct{ Name string }
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

// shimPath puts logging npm and npx in front of PATH: each run is a line
// in the returned file, then the real program runs.
func shimPath(t *testing.T) (log string) {
	dir := t.TempDir()
	log = filepath.Join(dir, "runs.log")
	for _, name := range []string{"npm", "npx"} {
		real, err := exec.LookPath(name)
		if err != nil {
			testenv.Program(t, name, "install Node.js 20 or newer")
		}
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >> %q\nexec %q \"$@\"\n", name, log, real)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

func runs(t *testing.T, log string) []string {
	data, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(data), " ", "_"))
}

func cmdline(t *testing.T, pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("reading the child's command line: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

func TestNPMInstalledOnceRunWithNode(t *testing.T) {
	testenv.Node(t)
	version := everythingVersion(t)
	log := shimPath(t)
	srv := registrytest.New(t, everything(version))
	state, path := t.TempDir(), filepath.Join(t.TempDir(), "config.json")
	add := func(as string) *registry.AddResult {
		res, err := registry.Add(t.Context(), registry.AddOptions{Client: client(srv.URL),
			Name: "io.github.modelcontextprotocol/server-everything", As: as, Config: path, StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := add("")
	if !first.Installed || first.Name != "server-everything" || first.Kind != "npm" {
		t.Fatalf("first add: %+v", first)
	}
	if got := runs(t, log); len(got) != 1 || !strings.HasPrefix(got[0], "npm_install_--prefix_"+registry.NPMDir(state, everythingPkg, version)) {
		t.Fatalf("npm runs: %q, want one install into the state dir", got)
	}
	if second := add("everything-again"); second.Installed {
		t.Errorf("the second add of the same version installed it again")
	}
	if got := runs(t, log); len(got) != 1 {
		t.Errorf("npm ran again for the second add: %q", got)
	}

	bin := filepath.Join(registry.NPMDir(state, everythingPkg, version), "node_modules", everythingPkg, "dist", "index.js")
	b := brokerOf(t, path)
	var pids []int
	for i := range 2 {
		if names := toolNames(t, b, "server-everything"); !slices.Contains(names, "echo") {
			t.Fatalf("spawn %d: tools %v, want echo among them", i+1, names)
		}
		in := b.Instances()
		if len(in) != 1 || in[0].Pid == 0 {
			t.Fatalf("spawn %d: instances %+v", i+1, in)
		}
		if got, want := cmdline(t, in[0].Pid), []string{"node", bin, "stdio"}; !slices.Equal(got, want) {
			t.Errorf("spawn %d: the child is %q, want %q", i+1, got, want)
		}
		pids = append(pids, in[0].Pid)
		if err := b.StopInstance(t.Context(), in[0].ID); err != nil {
			t.Fatal(err)
		}
	}
	if pids[0] == pids[1] {
		t.Errorf("the second spawn reused pid %d: not a new child", pids[0])
	}
	if got := runs(t, log); len(got) != 1 {
		t.Errorf("npm or npx ran for a spawn: %q", got)
	}
}

func TestRemoteBecomesURLServer(t *testing.T) {
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil)
	remoteSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(remoteSrv.Close) // after the broker's Close: it holds a stream open
	srv := registrytest.New(t, remote(remoteSrv.URL))
	path := filepath.Join(t.TempDir(), "config.json")
	res, err := registry.Add(t.Context(), registry.AddOptions{Client: client(srv.URL),
		Name: "com.example/remote-demo", Config: path, StateDir: t.TempDir(), Values: map[string]string{"token": "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != "remote" || res.Name != "remote-demo" {
		t.Errorf("added %+v", res)
	}
	data, _ := os.ReadFile(path)
	want := fmt.Sprintf(`"url": %q,
      "headers": {
        "Authorization": "Bearer s3cret"
      }`, remoteSrv.URL+"/mcp")
	if !strings.Contains(string(data), want) {
		t.Errorf("the entry is not the remote's url and header:\n%s", data)
	}
	b := brokerOf(t, path)
	if names := toolNames(t, b, "remote-demo"); !slices.Contains(names, "echo") {
		t.Errorf("the remote's tools: %v", names)
	}
	out, err := b.CallTool(t.Context(), broker.Request{Caller: localCaller, Server: "remote-demo"}, "echo", json.RawMessage(`{"message":"through mcpx"}`), nil)
	if err != nil || !strings.Contains(string(out), "through mcpx") {
		t.Errorf("echo through the remote: %s, %v", out, err)
	}
}

func TestLauncherMissingAtSpawn(t *testing.T) {
	srv := registrytest.New(t, weather, fetchOCI)
	path := filepath.Join(t.TempDir(), "config.json")
	for _, o := range []registry.AddOptions{
		{Name: "io.example/weather", Values: map[string]string{"WEATHER_API_KEY": "k", "cache_dir": "/c"}},
		{Name: "io.example/fetch", Values: map[string]string{"FETCH_TOKEN": "t"}},
	} {
		o.Client, o.Config, o.StateDir = client(srv.URL), path, t.TempDir()
		if _, err := registry.Add(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", t.TempDir()) // no uvx, no docker
	b := brokerOf(t, path)
	for server, want := range map[string][]string{
		"weather": {`cannot run "uvx"`, "uvx comes with uv", "docs.astral.sh/uv"},
		"fetch":   {`cannot run "docker"`, "install Docker"},
	} {
		_, err := b.Tools(t.Context(), broker.Request{Caller: localCaller, Server: server, Context: broker.CallContext{Cwd: t.TempDir()}})
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s without its launcher: %v, want an error saying %q", server, err, w)
			}
		}
	}
}
