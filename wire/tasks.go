package wire

import "time"

// Task is a tool call running as a task (MCP 2025-11-25 tasks): the answer
// of POST /v1/servers/{server}/tools/{tool}?task=true (202 Accepted, with
// Location naming it), of GET and DELETE /v1/tasks/{id}. Its id is the
// broker's own, good only for the caller that started it.
type Task struct {
	ID     string `json:"id"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Status is one of TaskWorking, TaskInputRequired, TaskCompleted,
	// TaskFailed, TaskCancelled; the last three are terminal.
	Status        string     `json:"status"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	Created       *time.Time `json:"created,omitempty"` // the server's createdAt
	Updated       *time.Time `json:"updated,omitempty"` // the server's lastUpdatedAt
	// TTL is how long the task is kept after its creation, as a Go
	// duration; "" = until the broker's own bound.
	TTL string `json:"ttl,omitempty"`
	// PollInterval is how often the server suggests asking for its
	// status, as a Go duration; "" = not said.
	PollInterval string `json:"pollInterval,omitempty"`
}

// Task statuses (Task.Status).
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// TaskList is GET /v1/tasks: the caller's own tasks, newest first.
type TaskList struct {
	Tasks []Task `json:"tasks"`
}

// QueryTask is the query parameter of a tool call that runs it as a task
// (?task=true).
const QueryTask = "task"
