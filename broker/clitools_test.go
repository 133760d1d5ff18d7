package broker_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// gitCLI is a cli server wrapping git log and ls, plus the tools the
// tests of refusal and cancellation need.
func gitCLI() map[string]any {
	return map[string]any{"cli": map[string]any{"tools": map[string]any{
		"log": map[string]any{
			"description": "the worktree's commits, newest first",
			"args":        []string{"git", "log", "--format=%s", "-n", "{count}"},
			"input": map[string]any{"type": "object", "properties": map[string]any{
				"count": map[string]any{"type": "integer", "minimum": 1, "description": "how many commits"}}, "required": []string{"count"}},
		},
		"ls":    map[string]any{"args": []string{"ls", "-1"}},
		"touch": map[string]any{"args": []string{"touch", "{name}"}, "input": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string", "pattern": "^[a-z]+$"}}}},
		"hang":  map[string]any{"args": []string{"/bin/sh", "-c", "echo started > started; sleep 1000 & sleep 1000"}},
	}}}
}

// TestCLIToolsAnswerPerWorktree: git log and ls wrapped as tools answer
// per worktree, as a command server's child would: the instance of each
// worktree runs its commands there (the scope root is the cwd), from
// whatever directory under it the caller is in.
func TestCLIToolsAnswerPerWorktree(t *testing.T) {
	testenv.Git(t)
	dir := t.TempDir()
	wts := testenv.Worktrees(t, filepath.Join(dir, "app"), map[string]string{"README": "hi\n", "pkg/a/a.txt": "a\n"}, "app-feature")
	main, feature := wts[0], wts[1]
	testenv.WriteFiles(t, feature, map[string]string{"feature.txt": "f\n"})
	testenv.RunGit(t, feature, "add", "-A")
	testenv.RunGit(t, feature, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "feature work")
	b := newRealBroker(t, map[string]map[string]any{"git": gitCLI()})

	for _, c := range []struct{ wt, log, ls string }{
		{main, "initial", "README\npkg"},
		{feature, "feature work\ninitial", "README\nfeature.txt\npkg"},
	} {
		from := filepath.Join(c.wt, "pkg", "a")
		if got := call(t, t.Context(), b, request("git", from), "log", map[string]any{"count": 5}); got.IsError || strings.TrimSpace(got.text()) != c.log {
			t.Errorf("log from %s = %q (isError %v), want %q", from, got.text(), got.IsError, c.log)
		}
		if got := call(t, t.Context(), b, request("git", from), "ls", map[string]any{}); strings.TrimSpace(got.text()) != c.ls {
			t.Errorf("ls from %s = %q, want %q", from, got.text(), c.ls)
		}
	}
	insts := instancesOf(b, "git")
	for _, wt := range wts {
		in, ok := insts["worktree:"+wt]
		if !ok || in.Root != wt || in.Cwd != wt || in.Transport != "cli" || in.Pid != 0 {
			t.Errorf("instance of %s = %+v; want a cli instance rooted and run there", wt, in)
		}
	}
	if len(insts) != 2 {
		t.Errorf("instances = %v, want one per worktree", slices.Collect(maps.Keys(insts)))
	}
	if names := toolNames(t, t.Context(), b, request("git", main)); !slices.Equal(names, []string{"hang", "log", "ls", "touch"}) {
		t.Errorf("tools = %v", names)
	}
	raw, err := b.Tools(t.Context(), request("git", main))
	if err != nil || !strings.Contains(string(raw), `"count":{"description":"how many commits","minimum":1,"type":"integer"}`) {
		t.Errorf("tools/list lost the input schema: %s, %v", raw, err)
	}
}

// TestCLIRefusedBeforeAnythingRuns: arguments that fail the input schema
// are an isError result naming the argument, and nothing runs; a
// placeholder that is not a whole argument is a config error naming the
// server and field.
func TestCLIRefusedBeforeAnythingRuns(t *testing.T) {
	testenv.Git(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	b := newRealBroker(t, map[string]map[string]any{"git": gitCLI()})
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"touch", map[string]any{"name": "../../etc/x"}, "argument name: '../../etc/x' does not match pattern"},
		{"touch", map[string]any{"name": 7}, "argument name: got number, want string"},
		{"log", map[string]any{"count": "5; rm -rf /"}, "argument count: got string, want integer"},
		{"log", map[string]any{"count": 0}, "argument count: minimum"},
		{"log", map[string]any{}, "missing property 'count'"},
	} {
		got := call(t, t.Context(), b, request("git", dir), c.tool, c.args)
		if !got.IsError || !strings.Contains(got.text(), c.want) || !strings.Contains(got.text(), "nothing was run") {
			t.Errorf("%s %v = %q (isError %v); want %q", c.tool, c.args, got.text(), got.IsError, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused call ran: %s holds %v", dir, entries)
	}
	if got := call(t, t.Context(), b, request("git", dir), "touch", map[string]any{"name": "ok"}); got.IsError {
		t.Errorf("touch ok = %q", got.text())
	}

	doc := `{"servers":{"gh":{"cli":{"tools":{"prs":{"args":["gh","pr","list","--limit={limit}"]}}}}}}`
	_, err := config.Parse([]byte(doc), "test.json")
	if err == nil || !strings.Contains(err.Error(), `server "gh"`) || !strings.Contains(err.Error(), "cli.tools.prs.args[3]") || !strings.Contains(err.Error(), "whole argument") {
		t.Errorf("config error = %v", err)
	}
}

// TestCLICancelAndTimeoutLeaveNoProcess: a call cancelled by its caller,
// and one past the server's callTimeout, kill the command's whole process
// tree (the leak checker of newRealBroker finds any left), and the server
// keeps serving.
func TestCLICancelAndTimeoutLeaveNoProcess(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	srv := gitCLI()
	srv["callTimeout"] = "2s"
	b := newRealBroker(t, map[string]map[string]any{"git": srv})

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { _, err := callErr(ctx, b, request("git", dir), "hang", map[string]any{}, nil); errc <- err }()
	started := filepath.Join(dir, "started")
	testenv.WaitFor(t, "the command to start", func() bool { _, err := os.Stat(started); return err == nil })
	cancel()
	select {
	case err := <-errc:
		if k := broker.KindOf(err); k != broker.KindCanceled {
			t.Errorf("cancelled call: %v (kind %s)", err, k)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	// Now, while the instance runs on: its stop would kill the rest by
	// the instance's mark, which is not the call's doing.
	testenv.WaitFor(t, "the cancelled call's processes to go", func() bool { return len(proctest.Marked(t)) == 0 })

	os.Remove(started)
	_, err := callErr(t.Context(), b, request("git", dir), "hang", map[string]any{}, nil)
	if k := broker.KindOf(err); k != broker.KindTimeout {
		t.Errorf("a call past callTimeout: %v (kind %s), want a timeout", err, k)
	}
	testenv.WaitFor(t, "the timed-out call's processes to go", func() bool { return len(proctest.Marked(t)) == 0 })
	if got := call(t, t.Context(), b, request("git", dir), "ls", map[string]any{}); got.IsError || !strings.Contains(got.text(), "started") {
		t.Errorf("ls after = %q", got.text())
	}
}

// TestCLIRefusedDefinitionFailsOnlyItsServer: a cli block the adapter
// refuses when it is built (an input schema that refers outside itself,
// which the config's own checks cannot compile) fails that server's start
// with the adapter's message, for the owner to read; other servers serve.
func TestCLIRefusedDefinitionFailsOnlyItsServer(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	b := newRealBroker(t, map[string]map[string]any{
		"git": gitCLI(),
		"bad": {"cli": map[string]any{"tools": map[string]any{"t": map[string]any{"args": []string{"ls", "{a}"},
			"input": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "https://example.invalid/s.json"}}}}}}},
	})
	_, err := callErr(t.Context(), b, request("bad", dir), "t", map[string]any{"a": "x"}, nil)
	var be *broker.Error
	if !errors.As(err, &be) || be.Kind != broker.KindChildFailed || !strings.Contains(be.Private, `server "bad": cli.tools.t.input`) || !strings.Contains(be.Private, "not loaded") {
		t.Errorf("bad: %#v; want a failed start with the adapter's message", err)
	}
	if got := call(t, t.Context(), b, request("git", dir), "ls", map[string]any{}); got.IsError {
		t.Errorf("git ls = %q", got.text())
	}
}
