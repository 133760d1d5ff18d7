// Package mcptest runs the official TypeScript SDK client
// (testdata/npm/clients/mcp-ts-client.mjs) against mcpx's MCP endpoint and
// judges what it saw, for the tests of api/mcp (Streamable HTTP) and cmd/mcpx
// (the `mcpx mcp` bridge over stdio). Tests only.
package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TSResult is what the script reports.
type TSResult struct {
	Protocol      string
	Session       bool
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

// RunTSClient runs the script with node against target (an http:// URL of
// /mcp, or "stdio:<mcpx binary>") with token ("-" for none), the client's
// root first in wt1, then in wt2, in dir with env; the endpoint must serve
// the demo server (worktree scope) and server-everything with sampling.
func RunTSClient(t *testing.T, node, target, token, wt1, wt2, dir string, env []string) TSResult {
	t.Helper()
	script := filepath.Join(testenv.RepoRoot(t), "testdata", "npm", "clients", "mcp-ts-client.mjs")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, target, token, wt1, wt2)
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("the TypeScript client failed: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var r TSResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return r
}

// Check judges r: the aggregate's names, the worktree's child before and
// after roots/list_changed, progress, elicitation, sampling, abort,
// prompts, resources and templates.
func (r TSResult) Check(t *testing.T, wt1, wt2 string) {
	t.Helper()
	if !slices.Contains(r.Tools, "demo__cwd") || !slices.Contains(r.Tools, "everything__trigger-sampling-request") {
		t.Errorf("tools %v", r.Tools)
	}
	if r.Cwd1 != wt1 || r.Cwd2 != wt2 {
		t.Errorf("cwd before and after roots/list_changed: %q, %q; want %s, %s", r.Cwd1, r.Cwd2, wt1, wt2)
	}
	// At least one: the TypeScript SDK runs a notification's handler a
	// microtask after reading it, but a response's at once, so the last
	// notifications read with the response can find no handler (the
	// go-sdk tests count all of them).
	if r.Progress != "done 3" || r.ProgressCount < 1 {
		t.Errorf("progress %q with %d notifications", r.Progress, r.ProgressCount)
	}
	if !strings.Contains(r.Ask, "Ada") || !strings.Contains(r.Sample, "sampled by the client") {
		t.Errorf("elicitation %q, sampling %q", r.Ask, r.Sample)
	}
	if !r.Aborted {
		t.Error("the aborted call returned")
	}
	if !slices.Contains(r.Prompts, "demo__greet") || r.Greet == 0 || len(r.Resources) == 0 || r.Read == 0 || len(r.Templates) == 0 {
		t.Errorf("prompts %v (greet %d), resources %v (read %d), templates %v", r.Prompts, r.Greet, r.Resources, r.Read, r.Templates)
	}
}
