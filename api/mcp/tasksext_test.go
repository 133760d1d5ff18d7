package mcp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// statelessCaller posts 2026-07-28 requests to /mcp/everything as one
// token's caller, declaring the tasks extension or not.
type statelessCaller struct {
	t     *testing.T
	url   string
	token string
}

type rpcReply struct {
	status int
	Result map[string]json.RawMessage
	Error  *struct {
		Code    int
		Message string
		Data    json.RawMessage
	}
}

func (c statelessCaller) call(method, name string, params map[string]any, ext bool) rpcReply {
	c.t.Helper()
	caps := map[string]any{}
	if ext {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]string{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequestWithContext(c.t.Context(), "POST", c.url, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r rpcReply
	if err := json.Unmarshal(raw, &r); err != nil {
		c.t.Fatalf("%s: %d %s", method, resp.StatusCode, raw)
	}
	r.status = resp.StatusCode
	return r
}

// js is a result as JSON, for a failure's message.
func js(m map[string]json.RawMessage) string {
	b, _ := json.Marshal(m)
	return string(b)
}

func str(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s) //nolint:errcheck // not a string: ""
	return s
}

// TestMCPTasksExtensionStateless: a 2026-07-28 client gets the tasks
// extension (SEP-2663) over the broker's tasks of a 2025-11-25 child
// (server-everything's task-only simulate-research-query): the server
// decides, the result is inlined on tasks/get, cancel is an ack, removed
// methods are gone, and another caller's task id is unknown.
func TestMCPTasksExtensionStateless(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: apitest.EverythingConfig(t, nil, nil), Tokens: is})
	rule := rights.Rule{Servers: []string{"everything"}, Scopes: []string{"global"}}
	url := "http://" + d.TCPAddr + "/mcp/everything"
	alice := statelessCaller{t, url, apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "alice", Rule: rule}).Token}
	bob := statelessCaller{t, url, apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "bob", Rule: rule}).Token}

	disc := alice.call("server/discover", "", nil, true)
	var caps map[string]json.RawMessage
	json.Unmarshal(disc.Result["capabilities"], &caps) //nolint:errcheck // checked below
	if caps["tasks"] != nil || !strings.Contains(string(caps["extensions"]), "io.modelcontextprotocol/tasks") {
		t.Errorf("server/discover capabilities %s, want the extension and no 2025-11-25 tasks", disc.Result["capabilities"])
	}

	research := map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "tides"}}
	if r := alice.call("tools/call", "simulate-research-query", research, false); r.Error == nil || r.Error.Code != -32021 ||
		!strings.Contains(string(r.Error.Data), "io.modelcontextprotocol/tasks") {
		t.Errorf("a task-only tool without the extension: %+v, want -32021 naming it", r.Error)
	}
	created := alice.call("tools/call", "simulate-research-query", research, true)
	id := str(created.Result["taskId"])
	if str(created.Result["resultType"]) != "task" || !strings.HasPrefix(id, "task-") || created.Result["task"] != nil ||
		str(created.Result["status"]) != "working" || created.Result["ttlMs"] == nil || created.Result["createdAt"] == nil {
		t.Fatalf("CreateTaskResult %v, want a flat task of mcpx's id", js(created.Result))
	}
	if r := alice.call("tasks/get", id, map[string]any{"taskId": id}, false); r.Error == nil || r.Error.Code != -32021 {
		t.Errorf("tasks/get without the extension: %+v, want -32021", r.Error)
	}
	if r := bob.call("tasks/get", id, map[string]any{"taskId": id}, true); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("bob's tasks/get of alice's task: %+v %v, want -32602 as for no task", r.Error, js(r.Result))
	}
	if r := bob.call("tasks/cancel", id, map[string]any{"taskId": id}, true); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("bob's tasks/cancel of alice's task: %+v, want -32602", r.Error)
	}
	for _, m := range []string{"tasks/result", "tasks/list"} {
		if r := alice.call(m, "", map[string]any{"taskId": id}, true); r.Error == nil || r.Error.Code != -32601 {
			t.Errorf("%s: %+v, want -32601 (removed by the extension)", m, r.Error)
		}
	}
	var done rpcReply
	testenv.WaitFor(t, "the task to end", func() bool {
		done = alice.call("tasks/get", id, map[string]any{"taskId": id}, true)
		if done.Error != nil {
			t.Fatalf("tasks/get: %+v", done.Error)
		}
		if s := str(done.Result["status"]); s != "working" {
			return true
		}
		if done.Result["result"] != nil {
			t.Fatalf("a working task inlines a result: %v", js(done.Result))
		}
		return false
	})
	if str(done.Result["status"]) != "completed" || str(done.Result["resultType"]) != "complete" ||
		!strings.Contains(string(done.Result["result"]), "tides") || strings.Contains(string(done.Result["result"]), "related-task") {
		t.Errorf("the completed task %v, want its result inlined without the related-task _meta", js(done.Result))
	}
	if r := alice.call("tasks/cancel", id, map[string]any{"taskId": id}, true); r.Error != nil || str(r.Result["resultType"]) != "complete" {
		t.Errorf("cancelling a finished task: %+v %v, want the empty ack", r.Error, js(r.Result))
	}

	second := str(alice.call("tools/call", "simulate-research-query", research, true).Result["taskId"])
	if r := alice.call("tasks/cancel", second, map[string]any{"taskId": second}, true); r.Error != nil || len(r.Result) != 1 {
		t.Errorf("tasks/cancel: %+v %v, want {resultType: complete} alone", r.Error, js(r.Result))
	}
	if r := alice.call("tasks/get", second, map[string]any{"taskId": second}, true); str(r.Result["status"]) != "cancelled" || r.Result["result"] != nil {
		t.Errorf("after tasks/cancel: %v, want cancelled and no result", js(r.Result))
	}
	if r := alice.call("tasks/get", "task-nope", map[string]any{"taskId": "task-0"}, true); r.status != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32020 {
		t.Errorf("Mcp-Name not matching the taskId: %d %+v, want 400 -32020", r.status, r.Error)
	}
	if r := alice.call("tools/call", "echo", map[string]any{"name": "echo", "arguments": map[string]any{"message": "hi"}, "task": map[string]any{"ttl": 1000}}, true); r.Error != nil ||
		str(r.Result["resultType"]) != "complete" || r.Result["taskId"] != nil {
		t.Errorf("a sync tool with the legacy task param: %+v %v, want a plain result", r.Error, js(r.Result))
	}
}
