package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// Task-augmented requests (spec 2025-11-25, basic/utilities/tasks): a
// tools/call with a "task" member is answered at once with a
// CreateTaskResult ({"task":{"taskId","status",...}}); the result is then
// fetched with tasks/result, which blocks until the task is terminal.
// tasks/get, tasks/list and tasks/cancel answer Task objects. The child
// sends notifications/tasks/status as a task changes (Options.OnNotify).
//
// The client declares nothing for this: capabilities.tasks of a client is
// about tasks the client itself hosts (sampling, elicitation run as tasks),
// and mcpx hosts none. The child declares tasks.requests.tools.call.

// CallToolTask calls tools/call for the tool name as a task, asking the
// child to keep the task ttl past its creation (0 = the child's default),
// and returns the CreateTaskResult as the child sent it.
func (s *Session) CallToolTask(ctx context.Context, name string, args json.RawMessage, ttl time.Duration) (json.RawMessage, error) {
	if err := s.refusedTool(ctx, name); err != nil {
		return nil, err
	}
	b := getBuf()
	defer putBuf(b)
	if err := writeToolCall(b, name, args); err != nil {
		return nil, fmt.Errorf("calling tool %s as a task: arguments: %w", name, err)
	}
	b.WriteString(`,"task":{`)
	if ttl > 0 {
		b.WriteString(`"ttl":`)
		b.Write(strconv.AppendInt(b.AvailableBuffer(), ttl.Milliseconds(), 10))
	}
	b.WriteString(`}}`)
	return s.requestRounds(ctx, jsonrpc.MethodToolsCall, b.Bytes(), nil)
}

// Task sends method (tasks/get, tasks/result or tasks/cancel: the
// jsonrpc.MethodTasks constants) for the child's task id and returns the result as the child sent it:
// a Task object, or for tasks/result the request's own result (a
// CallToolResult), which the child sends only once the task is terminal.
func (s *Session) Task(ctx context.Context, method, id string) (json.RawMessage, error) {
	params := jsonrpc.AppendString([]byte(`{"taskId":`), id)
	return s.Call(ctx, method, append(params, '}'), nil)
}

// TaskMetadata is what a Task object (or a CreateTaskResult's task) says.
type TaskMetadata struct {
	ID            string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// TTL is in milliseconds; nil = kept until cleaned up.
	TTL          *int64 `json:"ttl"`
	PollInterval *int64 `json:"pollInterval,omitempty"`
	CreatedAt    string `json:"createdAt,omitempty"`
	UpdatedAt    string `json:"lastUpdatedAt,omitempty"`
}

// ParseTask reads a Task object, or the task of a CreateTaskResult.
func ParseTask(raw json.RawMessage) (TaskMetadata, error) {
	var w struct {
		Task *TaskMetadata `json:"task"`
		TaskMetadata
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return TaskMetadata{}, fmt.Errorf("reading a task: %w", err)
	}
	t := w.TaskMetadata
	if w.Task != nil {
		t = *w.Task
	}
	if t.ID == "" || t.Status == "" {
		return TaskMetadata{}, fmt.Errorf("reading a task: no taskId or status in %s", truncate(raw, 200))
	}
	return t, nil
}

// Terminal reports whether status is one a task never leaves.
func Terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}
