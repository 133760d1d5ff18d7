package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/mcptest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
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
	env := append(os.Environ(), "MCPX_NO_AUTOSTART=1", proctest.Env(t))
	mcptest.RunTSClient(t, node, "stdio:"+bin, "-", wts[0], wts[1], home, env).Check(t, wts[0], wts[1])
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
