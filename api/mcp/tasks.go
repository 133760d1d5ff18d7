package mcp

import (
	"context"
	"encoding/json"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// Tasks (MCP 2025-11-25, basic/utilities/tasks) pass through the broker:
// a tools/call with a "task" member creates the child's task and answers
// the CreateTaskResult with the broker's own task id; tasks/get, result,
// list and cancel name that id, which is good only for the caller that
// created the task (another caller's is "no task", as one that does not
// exist). tasks/list is the caller's own tasks, never the child's list.
// A session that created a task is sent its notifications/tasks/status
// while it lasts; the task itself outlives the session.

// isTaskCall reports whether a tools/call asks to run as a task.
func isTaskCall(msg *message) bool {
	p, err := msg.params()
	if err != nil {
		return false
	}
	t := p.get("task")
	return len(t) > 0 && t[0] == '{'
}

// callToolAsTask creates the task and answers its CreateTaskResult.
func (ss *session) callToolAsTask(ctx context.Context, st *stream, msg *message) (json.RawMessage, error) {
	r, tool, p, err := ss.toolCall(ctx, st, msg)
	if err != nil {
		return nil, err
	}
	var meta struct {
		TTL int64 `json:"ttl"`
	}
	json.Unmarshal(p.get("task"), &meta) //nolint:errcheck // no ttl: the child's default
	t, err := ss.srv.b.StartToolTask(ctx, r, tool, p.get("arguments"), time.Duration(meta.TTL)*time.Millisecond)
	ss.track(r)
	if err != nil {
		return nil, err
	}
	if ss.id != "" {
		ss.watchTask(t.ID)
	}
	return object{}.set("task", t.Object).bytes(), nil
}

// watchTask sends the session the task's status changes until the task
// ends or the session does.
func (ss *session) watchTask(id string) {
	stop, err := ss.srv.b.WatchTask(ss.caller, id, func(t broker.Task) {
		ss.notify(nil, jsonrpc.MethodTaskStatus, t.Object)
	})
	if err != nil {
		return
	}
	context.AfterFunc(ss.ctx, stop)
}

// task answers tasks/get, tasks/result, tasks/list and tasks/cancel.
func (ss *session) task(ctx context.Context, msg *message) (json.RawMessage, error) {
	b := ss.srv.b
	if msg.Method == jsonrpc.MethodTasksList {
		// One page: a caller's tasks are bounded (the broker keeps a few
		// hundred at most).
		list := []json.RawMessage{}
		for _, t := range b.Tasks(ss.caller) {
			list = append(list, t.Object)
		}
		raw, _ := json.Marshal(list)
		return object{}.set("tasks", raw).bytes(), nil
	}
	p, err := msg.params()
	id := p.str("taskId")
	if err != nil || id == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg.Method + " needs a taskId"}
	}
	var t broker.Task
	switch msg.Method {
	case jsonrpc.MethodTasksResult:
		return b.TaskResult(ctx, ss.caller, id)
	case jsonrpc.MethodTasksCancel:
		t, err = b.CancelTask(ctx, ss.caller, id)
	default:
		t, err = b.TaskStatus(ctx, ss.caller, id)
	}
	if err != nil {
		return nil, err
	}
	return t.Object, nil
}
