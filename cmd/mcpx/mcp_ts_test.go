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
	home, state := claudeHome(t) // a private HOME and XDG directories
	node := testenv.Node(t)
	everything := testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(home), "bin", "mcpx") // this test binary, run as mcpx (TestMain)
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	wts := testenv.Worktrees(t, filepath.Join(t.TempDir(), "repo"), map[string]string{"README": "x"}, "wt1")
	marker := `{"` + proctest.MarkerEnv + `": "` + proctest.Marker(t) + `"}`
	cfgFile := filepath.Join(filepath.Dir(home), "config.json")
	testenv.WriteFile(t, cfgFile, `{"servers": {
		"demo": {"command": "`+bin+`", "args": ["demo-server"], "scope": "worktree", "env": `+marker+`},
		"everything": {"command": "`+node+`", "args": ["`+everything+`"], "scope": "global", "sampling": true, "env": `+marker+`}}}`)
	sock, err := defaultSocket(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stopDaemon := context.WithCancel(t.Context())
	var logs testenv.SyncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--socket", sock, "--state-dir", state, "--listen", "off", "--config", cfgFile},
			strings.NewReader(""), &testenv.SyncBuffer{}, &logs)
	}()
	defer func() {
		stopDaemon()
		if code := <-served; code != exitOK {
			t.Errorf("serve exited %d:\n%s", code, logs.String())
		}
	}()
	testenv.WaitFor(t, "the socket to answer", func() bool { return client.Answers(sock) })

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
			t.Fatalf("the TypeScript client failed: %v\n%s\ndaemon:\n%s", err, ee.Stderr, logs.String())
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
