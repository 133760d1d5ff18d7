package broker

// A task's JSON as the child and the caller see it: the tool's task
// support, the call that creates a child's task, and the Task object
// rewritten member by member (the broker's id and status over the
// child's).

import (
	"bytes"
	"context"
	"encoding/json"

	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// taskSupport is a tool definition's execution.taskSupport; absent is
// "forbidden" (schema 2025-11-25: "Default: forbidden").
func taskSupport(def json.RawMessage) string {
	// Most definitions have no execution member: skip the parse, which
	// every call would pay. The key matches as encoding/json matches it
	// (ASCII case folded); one spelled with a \u escape is parsed.
	if !containsFold(def, "execution") && !bytes.Contains(def, []byte(`\u`)) {
		return "forbidden"
	}
	var d struct {
		Execution struct {
			TaskSupport string `json:"taskSupport"`
		} `json:"execution"`
	}
	json.Unmarshal(def, &d) //nolint:errcheck // unreadable: no task support
	if d.Execution.TaskSupport == "" {
		return "forbidden"
	}
	return d.Execution.TaskSupport
}

// containsFold reports whether b holds s (lower-case ASCII) with ASCII case
// folded, without allocating.
func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if b[i]|0x20 == s[0] && bytes.EqualFold(b[i:i+len(s)], []byte(s)) {
			return true
		}
	}
	return false
}

// callAsTask runs a tool whose taskSupport is "required" as a task on sess
// and waits for its result: for callers that call it the simple way. When
// ctx ends first the task is cancelled.
func callAsTask(ctx context.Context, sess *client.Session, tool string, args json.RawMessage) (json.RawMessage, error) {
	out, err := sess.CallToolTask(ctx, tool, args, 0)
	if err != nil {
		return nil, err
	}
	m, err := client.ParseTask(out)
	if err != nil {
		return nil, err
	}
	res, err := sess.Task(ctx, jsonrpc.MethodTasksResult, m.ID)
	if err != nil && ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskCallTimeout)
		sess.Task(cctx, jsonrpc.MethodTasksCancel, m.ID) //nolint:errcheck // best effort: the caller is gone
		cancel()
	}
	return res, err
}

// taskObject is the task member of a CreateTaskResult, or raw itself.
func taskObject(raw json.RawMessage) json.RawMessage {
	var w struct {
		Task json.RawMessage `json:"task"`
	}
	if json.Unmarshal(raw, &w) == nil && len(w.Task) > 0 && w.Task[0] == '{' {
		return w.Task
	}
	return raw
}

// withTaskID is raw (a Task object or a result) with the child's task id
// replaced by id: its taskId, and the related-task _meta's.
func withTaskID(raw json.RawMessage, id string) json.RawMessage {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil || o == nil {
		return raw
	}
	q, _ := json.Marshal(id)
	if _, ok := o["taskId"]; ok {
		o["taskId"] = q
	}
	if m, ok := o["_meta"]; ok {
		var meta map[string]json.RawMessage
		if json.Unmarshal(m, &meta) == nil && meta[jsonrpc.MetaRelatedTask] != nil {
			meta[jsonrpc.MetaRelatedTask], _ = json.Marshal(map[string]string{"taskId": id})
			o["_meta"], _ = json.Marshal(meta)
		}
	}
	out, err := json.Marshal(o)
	if err != nil {
		return raw
	}
	return out
}

// setTaskStatus is the Task object raw with status and statusMessage set.
func setTaskStatus(raw json.RawMessage, status, msg string) json.RawMessage {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil || o == nil {
		o = map[string]json.RawMessage{}
	}
	o["status"], _ = json.Marshal(status)
	o["statusMessage"], _ = json.Marshal(msg)
	out, _ := json.Marshal(o)
	return out
}
