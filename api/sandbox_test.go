package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/petstoretest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/proc/sandbox"
	"mcpx.dev/mcpx/wire"
)

// TestGrantConfinedThroughTheDaemon: a grant (a signed token whose rule
// names the server and worktree A) calling over loopback TCP from A gets
// a child confined to A, though the config says nothing of a sandbox: it
// reads and writes A, and the kernel refuses it worktree B of the same
// repository. The owner's call from A, over the unix socket, gets another
// instance, unconfined, which reads B: the test can fail.
func TestGrantConfinedThroughTheDaemon(t *testing.T) {
	a, b, is := grantSetup(t)
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "worktree", "env": {"` + demo.EnvProbe + `": "1"}}`})
	w := watchConfined(t)
	d := apitest.Start(t, apitest.Options{Config: cfg, Tokens: is, StateDir: t.TempDir()})
	grant := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "alice", Rule: rights.Rule{Servers: []string{"demo"}, Roots: []string{a}}, TTL: "1h"})

	alice := func(tool string, args map[string]string) apitest.ToolResult {
		return callAs(t, d.TCP, grant.Token, a, "demo", tool, args)
	}
	owner := func(tool string, args map[string]string) apitest.ToolResult {
		return callAs(t, d.Unix, "", a, "demo", tool, args)
	}

	if res := alice("read", map[string]string{"path": filepath.Join(a, "mine.txt")}); res.IsError || res.Text() != "a's" {
		t.Errorf("the grant reading A: %+v", res)
	}
	if res := alice("write", map[string]string{"path": filepath.Join(a, "new.txt"), "text": "x"}); res.IsError {
		t.Errorf("the grant writing A: %+v", res)
	}
	if res := alice("read", map[string]string{"path": filepath.Join(b, "theirs.txt")}); !res.IsError || !strings.Contains(res.Text(), "permission denied") {
		t.Errorf("the grant reading B: %+v, want the kernel's permission denied", res)
	}
	if res := alice("write", map[string]string{"path": filepath.Join(b, "planted.txt"), "text": "x"}); !res.IsError || !strings.Contains(res.Text(), "permission denied") {
		t.Errorf("the grant writing B: %+v, want the kernel's permission denied", res)
	}
	if _, err := os.Stat(filepath.Join(b, "planted.txt")); err == nil {
		t.Errorf("the grant's child wrote in B")
	}
	if res := owner("read", map[string]string{"path": filepath.Join(b, "theirs.txt")}); res.IsError || res.Text() != "b's" {
		t.Errorf("the owner's child reading B: %+v; want it read, or this test cannot fail", res)
	}
	alicePid, ownerPid := alice("pid", map[string]string{}).Text(), owner("pid", map[string]string{}).Text()
	if alicePid == ownerPid {
		t.Errorf("the grant and the owner share the child %s", alicePid)
	}

	var list wire.InstanceList
	d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &list)
	if len(list.Instances) != 2 {
		t.Fatalf("instances %+v, want the owner's and the grant's", list.Instances)
	}
	for _, in := range list.Instances {
		if in.Key != "worktree:"+a {
			t.Errorf("instance %s has key %s, want worktree:%s", in.ID, in.Key, a)
		}
		switch strconv.Itoa(in.Pid) {
		case alicePid:
			w.Note(in.Pid)
			if in.Sandbox == nil || in.Sandbox.Why != confine.WhyCaller {
				t.Errorf("the grant's instance %+v, want it confined because of its caller", in)
			}
		case ownerPid:
			if in.Sandbox != nil {
				t.Errorf("the owner's instance is confined: %+v", in.Sandbox)
			}
		default:
			t.Errorf("instance %s has pid %d, neither the grant's nor the owner's", in.ID, in.Pid)
		}
	}
}

// grantSetup skips t where this kernel cannot confine a grant's child,
// and makes a repository with worktrees a (holding mine.txt) and b
// (theirs.txt), and a token issuer.
func grantSetup(t *testing.T) (a, b string, is *auth.Issuer) {
	t.Helper()
	needConfinement(t, &confine.Spec{Why: confine.WhyCaller, Limits: confine.DefaultLimits})
	wts := testenv.Worktrees(t, filepath.Join(t.TempDir(), "repo", "main"), map[string]string{"README": "r\n"}, "a", "b")
	a, b = wts[1], wts[2]
	testenv.WriteFiles(t, a, map[string]string{"mine.txt": "a's"})
	testenv.WriteFiles(t, b, map[string]string{"theirs.txt": "b's"})
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return a, b, is
}

// callAs calls server's tool over c from cwd, with token when not "".
func callAs(t *testing.T, c *apitest.Client, token, cwd, server, tool string, args any) apitest.ToolResult {
	t.Helper()
	body, _ := json.Marshal(args)
	headers := []string{wire.HeaderCwd, cwd}
	if token != "" {
		headers = append(headers, "Authorization", "Bearer "+token)
	}
	r := c.Do(t, "POST", "/v1/servers/"+server+"/tools/"+tool, string(body), headers...)
	if r.StatusCode != 200 {
		t.Fatalf("%s.%s: %d %s", server, tool, r.StatusCode, r.Bytes)
	}
	return r.Result(t)
}

// watchConfined watches the confined children of a daemon started after
// it (testenv.WatchConfined): none leaves a cgroup or a network namespace
// behind.
func watchConfined(t *testing.T) *testenv.Confined {
	k := sandbox.Probe()
	return testenv.WatchConfined(t, k.Memory.Dir, k.Pids.Dir)
}

// needConfinement skips t where this kernel cannot confine a child of
// spec (or fails it, with the test dependencies required).
func needConfinement(t *testing.T, spec *confine.Spec) {
	t.Helper()
	p := spec.Policy(confine.Facts{TmpDir: t.TempDir()})
	if _, err := sandbox.Plan(&p, sandbox.Probe()); err != nil {
		if os.Getenv(testenv.RequireDepsEnv) == "1" {
			t.Fatalf("this kernel cannot confine a child: %v", err)
		}
		t.Skipf("this kernel cannot confine a child: %v", err)
	}
}

// TestAdaptersForAGrant: a grant's calls of a CLI adapter run each
// command confined to the grant's root (the config says nothing of a
// sandbox): cat reads A and is refused B by the kernel, where the owner's
// instance, unconfined, reads B; a command that writes writes A only. An
// OpenAPI adapter, which starts no process, serves the grant as it serves
// anyone: its requests go from the daemon to its document's server. A
// command a limit ends says which.
func TestAdaptersForAGrant(t *testing.T) {
	a, b, is := grantSetup(t)
	cfg := petsConfig(t, petstoretest.Start(t))
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"files": map[string]any{"scope": "worktree", "cli": map[string]any{"tools": map[string]any{
			"cat":   map[string]any{"description": "Prints a file.", "args": []string{"cat", "{path}"}},
			"touch": map[string]any{"description": "Makes a file.", "args": []string{"touch", "{path}"}},
			"pid":   map[string]any{"description": "Its own pid.", "args": []string{"sh", "-c", "echo $$"}},
		}}},
		// tail holds the last 256 MiB it reads in memory.
		"hog": map[string]any{"scope": "worktree", "sandbox": map[string]any{"limits": map[string]any{"memory": "64MiB"}}, "cli": map[string]any{"tools": map[string]any{
			"hog": map[string]any{"description": "Uses memory.", "args": []string{"sh", "-c", "head -c 268435456 /dev/zero | tail -c 268435456 >/dev/null"}},
		}}},
	}})
	more, err := config.Parse(doc, "files.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers["files"], cfg.Servers["hog"] = more.Servers["files"], more.Servers["hog"]
	w := watchConfined(t)
	d := apitest.Start(t, apitest.Options{Config: cfg, Tokens: is, StateDir: t.TempDir()})
	grant := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "alice", Rule: rights.Rule{Servers: []string{"files", "pets"}, Roots: []string{a}}, TTL: "1h"})
	alice := func(server, tool string, args map[string]any) apitest.ToolResult {
		return callAs(t, d.TCP, grant.Token, a, server, tool, args)
	}

	if res := alice("files", "cat", map[string]any{"path": filepath.Join(a, "mine.txt")}); res.IsError || res.Text() != "a's" {
		t.Errorf("the grant's cat of A: %+v", res)
	}
	if res := alice("files", "cat", map[string]any{"path": filepath.Join(b, "theirs.txt")}); !res.IsError || !strings.Contains(res.Text(), "Permission denied") {
		t.Errorf("the grant's cat of B: %+v, want the kernel's permission denied", res)
	}
	if res := alice("files", "touch", map[string]any{"path": filepath.Join(a, "new.txt")}); res.IsError {
		t.Errorf("the grant's touch in A: %+v", res)
	}
	if res := alice("files", "touch", map[string]any{"path": filepath.Join(b, "planted.txt")}); !res.IsError {
		t.Errorf("the grant's touch in B: %+v, want it refused", res)
	}
	if _, err := os.Stat(filepath.Join(b, "planted.txt")); err == nil {
		t.Errorf("the grant's command wrote in B")
	}
	// Each command's cgroups are gone once it has returned (the watch
	// checks them at the end).
	if res := alice("files", "pid", map[string]any{}); res.IsError {
		t.Errorf("the grant's pid: %+v", res)
	} else if pid, err := strconv.Atoi(strings.TrimSpace(res.Text())); err == nil {
		w.Note(pid)
	}
	if res := callAs(t, d.Unix, "", a, "files", "cat", map[string]any{"path": filepath.Join(b, "theirs.txt")}); res.IsError || res.Text() != "b's" {
		t.Errorf("the owner's cat of B: %+v; want it read, or this test cannot fail", res)
	}
	var list wire.InstanceList
	d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &list)
	confined := 0
	for _, in := range list.Instances {
		if in.Server == "files" && in.Sandbox != nil && in.Sandbox.Why == confine.WhyCaller {
			confined++
		}
	}
	if confined != 1 {
		t.Errorf("instances %+v, want the grant's files instance confined, the owner's not", list.Instances)
	}
	r := d.TCP.Do(t, "GET", "/v1/servers/files/sandbox", "", wire.HeaderCwd, a, "Authorization", "Bearer "+grant.Token)
	var view wire.Sandbox
	if r.Decode(t, &view); r.StatusCode != 200 || !view.Confined || view.Why != confine.WhyCaller {
		t.Errorf("sandbox show for the grant's files: %d %s", r.StatusCode, r.Bytes)
	}

	// A command a limit ends says which.
	if res := callAs(t, d.Unix, "", a, "hog", "hog", map[string]any{}); !res.IsError || !strings.Contains(res.Text(), "limit: memory 64MiB") {
		t.Errorf("a command past its memory limit: %+v, want an error naming the limit", res)
	}

	if res := alice("pets", "getPetById", map[string]any{"petId": 1}); res.IsError || !strings.Contains(res.Text(), `"name":"doggie"`) {
		t.Errorf("the grant's call of an OpenAPI adapter: %+v", res)
	}
}
