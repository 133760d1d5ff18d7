package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mcpx.dev/mcpx/api/client"
	"mcpx.dev/mcpx/internal/proctest"
	"mcpx.dev/mcpx/internal/testenv"
)

// TestMCPBridgeTypeScriptClient: the official TypeScript SDK client starts
// `mcpx mcp` over stdio (testdata/npm/clients/mcp-ts-client.mjs), with a
// root in a git worktree, against a real daemon: tools, the worktree's
// child, progress, elicitation, sampling, abort, prompts, resources,
// templates, and roots/list_changed moving the next call.
func TestMCPBridgeTypeScriptClient(t *testing.T) {
	proctest.CheckNoLeaks(t)
	node := testenv.Node(t)
	everything := testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")
	wts := testenv.Worktrees(t, filepath.Join(t.TempDir(), "repo"), map[string]string{"README": "x"}, "wt1")
	home, bin := bridgeDaemon(t, func(bin, marker string) string {
		return `{"servers": {
		"demo": {"command": "` + bin + `", "args": ["demo-server"], "scope": "worktree", "env": ` + marker + `},
		"everything": {"command": "` + node + `", "args": ["` + everything + `"], "scope": "global", "sampling": true, "env": ` + marker + `}}}`
	})
	script := filepath.Join(testenv.RepoRoot(t), "testdata", "npm", "clients", "mcp-ts-client.mjs")
	cctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, node, script, "stdio:"+bin, "-", wts[0], wts[1])
	cmd.Env = append(os.Environ(), "MCPX_NO_AUTOSTART=1", proctest.Env(t))
	cmd.Dir = home
	outb, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("the TypeScript client failed: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var out struct {
		Tools         []string
		Cwd1, Cwd2    string
		Progress      string
		ProgressCount int
		Ask, Sample   string
		Aborted       bool
		Prompts       []string
		Greet, Read   int
		Resources     []string
		Templates     []string
	}
	if err := json.Unmarshal(outb, &out); err != nil {
		t.Fatalf("%v: %s", err, outb)
	}
	if !slices.Contains(out.Tools, "demo__cwd") || !slices.Contains(out.Tools, "everything__trigger-sampling-request") {
		t.Errorf("tools %v", out.Tools)
	}
	if out.Cwd1 != wts[0] || out.Cwd2 != wts[1] {
		t.Errorf("cwd before and after roots/list_changed: %q, %q; want %s, %s", out.Cwd1, out.Cwd2, wts[0], wts[1])
	}
	// At least one: the TypeScript SDK runs a notification's handler a
	// microtask after reading it, but a response's at once, so the last
	// notifications read with the response can find no handler (the
	// go-sdk tests count all of them).
	if out.Progress != "done 3" || out.ProgressCount < 1 {
		t.Errorf("progress %q with %d notifications", out.Progress, out.ProgressCount)
	}
	if !strings.Contains(out.Ask, "Ada") || !strings.Contains(out.Sample, "sampled by the client") {
		t.Errorf("elicitation %q, sampling %q", out.Ask, out.Sample)
	}
	if !out.Aborted {
		t.Error("the aborted call returned")
	}
	if !slices.Contains(out.Prompts, "demo__greet") || out.Greet == 0 || len(out.Resources) == 0 || out.Read == 0 || len(out.Templates) == 0 {
		t.Errorf("prompts %v (greet %d), resources %v (read %d), templates %v", out.Prompts, out.Greet, out.Resources, out.Read, out.Templates)
	}
}

// bridgeDaemon starts a real daemon in this process on the default socket
// of a private HOME, serving config(bin, marker): bin is this test binary
// run as mcpx (TestMain serves its commands, demo-server included),
// marker the proctest environment as a JSON object. It returns the HOME
// and bin; the daemon stops when t ends.
func bridgeDaemon(t *testing.T, config func(bin, marker string) string) (home, bin string) {
	t.Helper()
	home, state := claudeHome(t) // a private HOME and XDG directories
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(filepath.Dir(home), "bin", "mcpx")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(filepath.Dir(home), "config.json")
	testenv.WriteFile(t, cfgFile, config(bin, `{"`+proctest.MarkerEnv+`": "`+proctest.Marker(t)+`"}`))
	sock, err := defaultSocket(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stopDaemon := context.WithCancel(context.Background())
	var logs testenv.SyncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--socket", sock, "--state-dir", state, "--listen", "off", "--config", cfgFile},
			strings.NewReader(""), &testenv.SyncBuffer{}, &logs)
	}()
	t.Cleanup(func() {
		stopDaemon()
		if code := <-served; code != exitOK {
			t.Errorf("serve exited %d:\n%s", code, logs.String())
		}
	})
	testenv.WaitFor(t, "the socket to answer", func() bool { return client.Answers(sock) })
	return home, bin
}

// TestMCPBridgeStatelessSession: a stateless client (the go-sdk client at
// 2026-07-28) has no MCP session; `mcpx mcp` holds a caller session for it,
// so a session-scoped server keeps one child across its calls, and that
// child stops when the client (and so the bridge) goes.
func TestMCPBridgeStatelessSession(t *testing.T) {
	proctest.CheckNoLeaks(t)
	home, bin := bridgeDaemon(t, func(bin, marker string) string {
		return `{"servers": {"demo": {"command": "` + bin + `", "args": ["demo-server"], "scope": "session", "env": ` + marker + `}}}`
	})
	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "MCPX_NO_AUTOSTART=1", proctest.Env(t))
	cmd.Dir = home
	c := mcp.NewClient(&mcp.Implementation{Name: "stateless", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want the stateless era", v)
	}
	pid := func() string {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__pid"})
		if err != nil || res.IsError || len(res.Content) == 0 {
			t.Fatalf("demo__pid: %+v, %v", res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if a, b := pid(), pid(); a != b {
		t.Errorf("a session-scoped server gave a stateless client two children: %s, %s", a, b)
	}
	sock, _ := defaultSocket(os.Getenv)
	cl := client.New(sock, client.Options{})
	if st, _, err := cl.Instances(t.Context()); err != nil || len(st.Instances) != 1 {
		t.Fatalf("instances while the client runs: %v, %v", st, err)
	}
	if err := cs.Close(); err != nil {
		t.Logf("closing the client: %v", err)
	}
	testenv.WaitFor(t, "the bridge's session to stop its child", func() bool {
		st, _, err := cl.Instances(t.Context())
		return err == nil && len(st.Instances) == 0
	})
}
