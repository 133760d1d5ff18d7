package mcp_test

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

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// The MCP endpoint with a real client (the TypeScript SDK's own task
// flow): server-everything's task-only tool completes as a task on /mcp;
// caller B cannot get, read, cancel or list caller A's task knowing its
// id; A's task outlives A's session and A cancels it from a new one.
func TestMCPTasksTypeScriptSDKClient(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	node := testenv.Node(t)
	d := apitest.Start(t, apitest.Options{Config: apitest.EverythingConfig(t, nil, nil), Tokens: is})
	rule := rights.Rule{Servers: []string{"everything"}, Scopes: []string{"global"}}
	a := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "alice", Rule: rule}).Token
	b := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "bob", Rule: rule}).Token
	script := filepath.Join(testenv.RepoRoot(t), "testdata", "npm", "clients", "mcp-ts-tasks.mjs")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, "http://"+d.TCPAddr+"/mcp", a, b)
	cmd.Env = append(os.Environ(), proctest.Env(t))
	raw, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.Fatalf("%s failed: %v\n%s", filepath.Base(script), err, ee.Stderr)
	} else if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Capabilities                json.RawMessage
		TaskSupport                 string
		Stream                      []string
		TaskID, Result, Error       string
		SecondID                    string
		BGet, BResult, BCancel      string
		BList, AList, Notified      []string
		A2Status, A2Cancel, A2After string
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if !strings.Contains(string(out.Capabilities), `"call"`) || out.TaskSupport != "required" {
		t.Errorf("tasks capability %s, taskSupport %q: want tools/call tasks advertised and the tool's execution passed on", out.Capabilities, out.TaskSupport)
	}
	if len(out.Stream) < 2 || out.Stream[0] != "taskCreated" || out.Stream[len(out.Stream)-1] != "result" ||
		!strings.Contains(out.Result, "Research Report: coral") || !strings.HasPrefix(out.TaskID, "task-") {
		t.Errorf("callToolStream: %v, task %q, result %q, error %q; want taskCreated … result with the report", out.Stream, out.TaskID, out.Result, out.Error)
	}
	// The session that created the task is told of its stages, under
	// mcpx's id.
	if !slices.Contains(out.Notified, out.TaskID+" working") || !slices.Contains(out.Notified, out.TaskID+" completed") {
		t.Errorf("notifications/tasks/status %v, want %s working … completed", out.Notified, out.TaskID)
	}
	for what, got := range map[string]string{"tasks/get": out.BGet, "tasks/result": out.BResult, "tasks/cancel": out.BCancel} {
		if !strings.Contains(got, "no task") || strings.Contains(got, "alice") {
			t.Errorf("bob's %s of alice's task: %q, want no task (as for an id that never existed)", what, got)
		}
	}
	if len(out.BList) != 0 {
		t.Errorf("bob's tasks/list: %v, want none of alice's", out.BList)
	}
	if !slices.Contains(out.AList, out.SecondID) {
		t.Errorf("alice's tasks/list %v lacks her task %s", out.AList, out.SecondID)
	}
	if out.A2Status != "working" || out.A2Cancel != "cancelled" || out.A2After != "cancelled" {
		t.Errorf("alice on a new session: status %q, cancel %q, after %q; want working, cancelled, cancelled", out.A2Status, out.A2Cancel, out.A2After)
	}
	testenv.WaitFor(t, "the sessions and calls to end", func() bool { return d.MCP.Sessions() == 0 && d.InFlight() == 0 })
}
