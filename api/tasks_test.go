package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

const researchPath = "/v1/servers/everything/tools/simulate-research-query"

// startTask posts a task-augmented call and returns its Task.
func startTask(t *testing.T, c *apitest.Client, body string) wire.Task {
	t.Helper()
	r := c.Do(t, "POST", researchPath+"?task=true", body)
	if r.StatusCode != 202 {
		t.Fatalf("POST ?task=true: %d %s, want 202 and a task", r.StatusCode, r.Bytes)
	}
	var task wire.Task
	r.Decode(t, &task)
	if task.ID == "" || task.Status != wire.TaskWorking || task.Tool != "simulate-research-query" || task.Server != "everything" {
		t.Fatalf("task %+v, want a working task of everything's simulate-research-query", task)
	}
	if loc := r.Header.Get("Location"); loc != "/v1/tasks/"+task.ID {
		t.Errorf("Location %q, want /v1/tasks/%s", loc, task.ID)
	}
	return task
}

// waitTask polls the task until done says so, bounded.
func waitTask(t *testing.T, c *apitest.Client, id, what string, done func(wire.Task) bool) wire.Task {
	t.Helper()
	var task wire.Task
	testenv.WaitFor(t, "task "+id+": "+what, func() bool {
		r := c.Do(t, "GET", "/v1/tasks/"+id, "")
		if r.StatusCode != 200 {
			t.Fatalf("GET /v1/tasks/%s: %d %s", id, r.StatusCode, r.Bytes)
		}
		task = wire.Task{}
		r.Decode(t, &task)
		return done(task)
	})
	return task
}

// server-everything's task-only tool through REST: ?task=true answers the
// handle at once, the status is asked of the child, the result waits; a
// plain POST of the same tool runs it as a task and waits. The instance is
// held (not reaped, though its idle timeout is far shorter than the task)
// while a task works, and reaped once the last one ended.
func TestEverythingTaskOverREST(t *testing.T) {
	proctest.CheckNoLeaks(t)
	cfg := apitest.EverythingConfig(t, map[string]any{"idleTimeout": "200ms"}, map[string]any{"reapInterval": "50ms"})
	d := apitest.Start(t, apitest.Options{Config: cfg})

	task := startTask(t, d.Unix, `{"topic":"tidal pools"}`)
	var list wire.TaskList
	d.Unix.Do(t, "GET", "/v1/tasks", "").Decode(t, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
		t.Fatalf("GET /v1/tasks = %+v, want the one task", list)
	}
	got := waitTask(t, d.Unix, task.ID, "a stage of the research", func(tk wire.Task) bool {
		return strings.HasSuffix(tk.StatusMessage, "...") || tk.Status == wire.TaskCompleted
	})
	if got.ID != task.ID || got.TTL == "" {
		t.Errorf("GET /v1/tasks/%s = %+v, want the task with its ttl", task.ID, got)
	}
	r := d.Unix.Do(t, "GET", "/v1/tasks/"+task.ID+"/result", "")
	if r.StatusCode != 200 || !strings.Contains(r.Result(t).Text(), "Research Report: tidal pools") {
		t.Fatalf("GET result: %d %s, want the research report", r.StatusCode, r.Bytes)
	}
	var meta struct {
		Meta map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}
	json.Unmarshal(r.Bytes, &meta)
	if rt := meta.Meta["io.modelcontextprotocol/related-task"]; rt.TaskID != task.ID {
		t.Errorf("result _meta %s names task %q, want mcpx's id %s (never the child's)", r.Bytes, rt.TaskID, task.ID)
	}
	if got := waitTask(t, d.Unix, task.ID, "completed", func(tk wire.Task) bool { return tk.Status != wire.TaskWorking }); got.Status != wire.TaskCompleted {
		t.Errorf("after the result: %+v, want completed", got)
	}

	r = d.Unix.Do(t, "POST", researchPath, `{"topic":"kelp"}`, cwdHeader(t.TempDir())...)
	if r.StatusCode != 200 || !strings.Contains(r.Result(t).Text(), "Research Report: kelp") {
		t.Fatalf("plain POST of the task-only tool: %d %s, want the report", r.StatusCode, r.Bytes)
	}

	// A tool that cannot run as a task, a bad ?task=, no such tool.
	for _, c := range []struct {
		path   string
		status int
		detail string
	}{
		{"/v1/servers/everything/tools/echo?task=true", 400, `tool "echo" cannot run as a task: its execution.taskSupport is "forbidden"`},
		{researchPath + "?task=maybe", 400, `?task= must be true or false, not "maybe"`},
		{"/v1/servers/everything/tools/nope?task=true", 404, `no tool "nope"`},
	} {
		r := d.Unix.Do(t, "POST", c.path, `{"message":"x","topic":"x"}`)
		if r.StatusCode != c.status || !strings.Contains(r.Problem(t).Detail, c.detail) {
			t.Errorf("POST %s: %d %s, want %d saying %s", c.path, r.StatusCode, r.Bytes, c.status, c.detail)
		}
	}

	// Reaped after its last task: the idle timeout then applies.
	testenv.WaitFor(t, "every instance reaped once its tasks ended", func() bool {
		var doc struct{ Instances []broker.Instance }
		d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &doc)
		return len(doc.Instances) == 0
	})
}

// A caller can never get, list, read or cancel another's task, even
// knowing its id: to B, A's task is a task that does not exist. Cancelling
// (by A) stops the child's work; a finished task is dropped after its
// retention, and a task survives its caller's connection.
func TestTaskIsolationAndCancelOverREST(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: apitest.EverythingConfig(t, nil, nil), Tokens: is, Broker: func(o *broker.Options) { o.TaskRetention = 300 * time.Millisecond }})
	rule := rights.Rule{Servers: []string{"everything"}, Scopes: []string{"global"}}
	alice := bearerClient(d, apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "alice", Rule: rule}).Token)
	bob := bearerClient(d, apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "bob", Rule: rule}).Token)

	task := startTask(t, alice, `{"topic":"secrets of alice"}`)
	missing := bob.Do(t, "GET", "/v1/tasks/task-00000000000000000000000000000000", "")
	for _, req := range []struct{ method, path string }{
		{"GET", "/v1/tasks/" + task.ID},
		{"GET", "/v1/tasks/" + task.ID + "/result"},
		{"DELETE", "/v1/tasks/" + task.ID},
	} {
		r := bob.Do(t, req.method, req.path, "")
		if r.StatusCode != 404 || strings.Contains(string(r.Bytes), "alice") {
			t.Errorf("bob: %s %s = %d %s, want 404 naming nothing of alice", req.method, req.path, r.StatusCode, r.Bytes)
		}
		if p, q := r.Problem(t), missing.Problem(t); p.Type != q.Type || strings.ReplaceAll(p.Detail, task.ID, "X") != strings.ReplaceAll(q.Detail, "task-00000000000000000000000000000000", "X") {
			t.Errorf("bob: %s %s: %+v, want the problem of a task that does not exist: %+v", req.method, req.path, p, q)
		}
	}
	var list wire.TaskList
	bob.Do(t, "GET", "/v1/tasks", "").Decode(t, &list)
	if len(list.Tasks) != 0 {
		t.Errorf("bob lists %+v, want none of alice's", list.Tasks)
	}
	d.Unix.Do(t, "GET", "/v1/tasks", "").Decode(t, &list)
	if len(list.Tasks) != 0 {
		t.Errorf("the owner lists %+v, want none of alice's", list.Tasks)
	}

	// A new connection (a new client) of alice finds her task; she cancels it.
	alice2 := bearerClient(d, apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "alice", Rule: rule}).Token)
	r := alice2.Do(t, "DELETE", "/v1/tasks/"+task.ID, "")
	var cancelled wire.Task
	r.Decode(t, &cancelled)
	if r.StatusCode != 200 || cancelled.Status != wire.TaskCancelled {
		t.Fatalf("alice: DELETE = %d %s, want the task cancelled", r.StatusCode, r.Bytes)
	}
	if r := alice.Do(t, "DELETE", "/v1/tasks/"+task.ID, ""); r.StatusCode != 400 {
		t.Errorf("cancelling again: %d %s, want 400 (already ended)", r.StatusCode, r.Bytes)
	}
	// The child's work stopped: its next stage found the task cancelled.
	testenv.WaitFor(t, "the child's research to stop at the cancel", func() bool {
		return strings.Contains(d.Logs.String(), `from terminal status \"cancelled\"`)
	})
	if got := waitTask(t, alice, task.ID, "still cancelled", func(wire.Task) bool { return true }); got.Status != wire.TaskCancelled {
		t.Errorf("after the cancel: %+v", got)
	}
	if r := alice.Do(t, "GET", "/v1/tasks/"+task.ID+"/result", ""); r.StatusCode != 400 || !strings.Contains(r.Problem(t).Detail, task.ID+`" was cancelled`) {
		t.Errorf("the result of a cancelled task: %d %s, want 400 saying it was cancelled", r.StatusCode, r.Bytes)
	}

	// Dropped after its retention: to alice too it no longer exists.
	testenv.WaitFor(t, "alice's finished task dropped after its retention", func() bool {
		list.Tasks = nil
		alice.Do(t, "GET", "/v1/tasks", "").Decode(t, &list)
		return len(list.Tasks) == 0
	})
	if r := alice.Do(t, "GET", "/v1/tasks/"+task.ID, ""); r.StatusCode != 404 {
		t.Errorf("GET of a dropped task: %d %s, want 404", r.StatusCode, r.Bytes)
	}
}

// The generated TypeScript client (compiled by tsc, run on node): a tool
// call as a task, its status, the caller's list, its result; a cancel; a
// task that does not exist is an McpxError of kind not-found.
func TestTypeScriptClientTasks(t *testing.T) {
	proctest.CheckNoLeaks(t)
	node := testenv.Node(t)
	tsc := testenv.NPMPackageBin(t, "typescript")
	d := apitest.Start(t, apitest.Options{Config: apitest.EverythingConfig(t, nil, nil)})
	res := d.TCP.Do(t, "GET", "/v1/clients/typescript", "")
	if res.StatusCode != 200 {
		t.Fatalf("GET /v1/clients/typescript: %d %s", res.StatusCode, res.Bytes)
	}
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "client", "tasks.ts"))
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(dir, "client.ts"), string(res.Bytes))
	testenv.WriteFile(t, filepath.Join(dir, "tasks.ts"), string(script))
	js := filepath.Join(dir, "js")
	cmd := exec.Command(node, tsc, "--strict", "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler",
		"--rewriteRelativeImportExtensions", "--types", "", "--skipLibCheck", "--outDir", js,
		filepath.Join(dir, "client.ts"), filepath.Join(dir, "tasks.ts"))
	cmd.Env = append(os.Environ(), proctest.Env(t))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, b)
	}
	testenv.WriteFile(t, filepath.Join(js, "package.json"), `{"type":"module"}`)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "MCPX_URL=http://" + d.TCPAddr, "MCPX_TOKEN=" + apitest.Token}
	raw := runNode(t, env, node, filepath.Join(js, "tasks.js"))
	var out struct {
		ID, Created, Result, Cancelled, Missing string
		Listed, Got                             bool
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if !strings.HasPrefix(out.ID, "task-") || out.Created != "working" || !out.Listed || !out.Got {
		t.Errorf("callToolAsTask, listTasks, getTask: %+v", out)
	}
	if !strings.Contains(out.Result, "Research Report: reef") || out.Cancelled != "cancelled" {
		t.Errorf("taskResult %q, cancelTask %q; want the report, cancelled", out.Result, out.Cancelled)
	}
	if !strings.HasPrefix(out.Missing, "not-found: ") || !strings.Contains(out.Missing, `no task "task-nope"`) {
		t.Errorf("getTask of no task: %q, want an McpxError not-found", out.Missing)
	}
}

// runNode runs a node script (env nil = this process's) and returns its
// stdout; a failure fails t with its stderr.
func runNode(t *testing.T, env []string, argv ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(env[:len(env):len(env)], proctest.Env(t))
	raw, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%s failed: %v\n%s", filepath.Base(argv[1]), err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return raw
}
