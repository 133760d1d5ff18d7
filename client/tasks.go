package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"mcpx.dev/mcpx/wire"
)

// StartTask calls server's tool with args as a task (?task=true) and
// returns the task as soon as the child created it.
func (c *Client) StartTask(ctx context.Context, cl Caller, server, tool string, args json.RawMessage) (*wire.Task, []byte, error) {
	resp, err := c.send(ctx, wire.OpCallTool, &cl, args, nil, "?"+wire.QueryTask+"=true", server, tool)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the broker's answer: %w", err)
	}
	var t wire.Task
	if err := json.Unmarshal(raw, &t); err != nil || t.ID == "" {
		return nil, raw, fmt.Errorf("the broker's answer is not a task: %s", raw)
	}
	return &t, raw, nil
}

// Tasks lists the caller's own tasks.
func (c *Client) Tasks(ctx context.Context) (*wire.TaskList, []byte, error) {
	return get[wire.TaskList](ctx, c, wire.OpListTasks, nil, "")
}

// Task returns one of the caller's tasks.
func (c *Client) Task(ctx context.Context, id string) (*wire.Task, []byte, error) {
	return get[wire.Task](ctx, c, wire.OpGetTask, nil, "", id)
}

// CancelTask cancels one of the caller's tasks and returns it after.
func (c *Client) CancelTask(ctx context.Context, id string) (*wire.Task, []byte, error) {
	return get[wire.Task](ctx, c, wire.OpCancelTask, nil, "", id)
}

// TaskResult waits for one of the caller's tasks to end and returns its
// result: the child's CallToolResult.
func (c *Client) TaskResult(ctx context.Context, id string) (json.RawMessage, error) {
	return readRaw(c.send(ctx, wire.OpTaskResult, nil, nil, nil, "", id))
}
