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
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
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
	needConfinement(t, &confine.Spec{Why: confine.WhyCaller, Limits: confine.DefaultLimits})
	wts := testenv.Worktrees(t, filepath.Join(t.TempDir(), "repo", "main"), map[string]string{"README": "r\n"}, "a", "b")
	a, b := wts[1], wts[2]
	testenv.WriteFiles(t, a, map[string]string{"mine.txt": "a's"})
	testenv.WriteFiles(t, b, map[string]string{"theirs.txt": "b's"})
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "worktree", "env": {"` + demo.EnvProbe + `": "1"}}`})
	d := apitest.Start(t, apitest.Options{Config: cfg, Tokens: is, StateDir: t.TempDir()})
	grant := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "alice", Rule: rights.Rule{Servers: []string{"demo"}, Roots: []string{a}}, TTL: "1h"})

	call := func(c *apitest.Client, token, tool string, args map[string]string) apitest.ToolResult {
		t.Helper()
		body, _ := json.Marshal(args)
		headers := []string{wire.HeaderCwd, a}
		if token != "" {
			headers = append(headers, "Authorization", "Bearer "+token)
		}
		r := c.Do(t, "POST", "/v1/servers/demo/tools/"+tool, string(body), headers...)
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tool, r.StatusCode, r.Bytes)
		}
		return r.Result(t)
	}
	alice := func(tool string, args map[string]string) apitest.ToolResult {
		return call(d.TCP, grant.Token, tool, args)
	}
	owner := func(tool string, args map[string]string) apitest.ToolResult { return call(d.Unix, "", tool, args) }

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
