package main

import (
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestTasksCommands: `mcpx call --task` prints the handle of
// server-everything's task-only tool, `mcpx tasks` lists, shows, waits
// for and cancels tasks, and a plain `mcpx call` of the tool still works.
func TestTasksCommands(t *testing.T) {
	proctest.CheckNoLeaks(t)
	node := testenv.Node(t)
	everything := testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")
	bridgeDaemon(t, func(bin, marker string) string {
		return `{"servers": {"everything": {"command": "` + node + `", "args": ["` + everything + `"], "scope": "global", "env": ` + marker + `}}}`
	})
	mcpx := func(want int, args ...string) (string, string) {
		t.Helper()
		var stdout, stderr testenv.SyncBuffer
		if code := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr); code != want {
			t.Fatalf("mcpx %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	const tool = "everything.simulate-research-query"
	out, errOut := mcpx(exitOK, "call", "--task", tool, `{"topic":"cli"}`)
	id := strings.TrimSpace(out)
	if !strings.HasPrefix(id, "task-") || strings.Contains(id, "\n") || !strings.Contains(errOut, "mcpx tasks result "+id) {
		t.Fatalf("call --task: stdout %q stderr %q, want the task id alone and how to wait for it", out, errOut)
	}
	if out, _ := mcpx(exitOK, "tasks", "ls"); !strings.Contains(out, id) || !strings.Contains(out, "simulate-research-query") {
		t.Errorf("tasks ls:\n%s\nwant the task", out)
	}
	if out, _ := mcpx(exitOK, "tasks", "get", id); !strings.Contains(out, "status:  working") && !strings.Contains(out, "status:  completed") {
		t.Errorf("tasks get:\n%s", out)
	}
	if out, _ := mcpx(exitOK, "tasks", "result", id); !strings.Contains(out, "Research Report: cli") {
		t.Errorf("tasks result:\n%s\nwant the report", out)
	}
	if out, _ := mcpx(exitOK, "call", tool, `{"topic":"plain"}`); !strings.Contains(out, "Research Report: plain") {
		t.Errorf("a plain call of the task-only tool:\n%s\nwant the report", out)
	}
	out, _ = mcpx(exitOK, "call", "--task", tool, `{"topic":"dropped"}`)
	id2 := strings.TrimSpace(out)
	if out, _ := mcpx(exitOK, "tasks", "cancel", id2); !strings.Contains(out, "status:  cancelled") {
		t.Errorf("tasks cancel:\n%s", out)
	}
	if _, errOut := mcpx(exitFailed, "tasks", "get", "task-nope"); !strings.Contains(errOut, `no task "task-nope"`) {
		t.Errorf("tasks get of no task: %s", errOut)
	}
	if _, errOut := mcpx(exitUsage, "tasks", "cancel", ""); !strings.Contains(errOut, "is not a task id") {
		t.Errorf("tasks cancel of an empty id (a failed $(mcpx call --task)): %s", errOut)
	}
	if _, errOut := mcpx(exitUsage, "tasks", "get"); !strings.Contains(errOut, "want `ls`") {
		t.Errorf("tasks get without an id: %s", errOut)
	}
}
