package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// The tasks extension of the stateless revision (io.modelcontextprotocol/
// tasks, SEP-2663), for clients of the 2026-07-28 era, over the same broker
// tasks as the 2025-11-25 surface (tasks.go) and children of either era:
//
//   - the server decides: a tools/call of a tool whose execution.taskSupport
//     is optional or required, from a request that declares the extension in
//     its _meta client capabilities, answers a CreateTaskResult, flat
//     (resultType "task", taskId, status, createdAt, lastUpdatedAt, ttlMs,
//     pollIntervalMs); any other call runs as it always does, and one of a
//     required tool without the extension is -32021 naming it;
//   - tasks/get answers the task with its result (or error) inlined once it
//     is terminal; tasks/update and tasks/cancel answer an empty ack
//     (cancelling a task that ended is no error); tasks/result and
//     tasks/list are removed; an unknown id is -32602;
//   - server/discover declares the extension under capabilities.extensions
//     instead of the 2025-11-25 capabilities.tasks.
//
// Input a child asks for inside a task is declined (the broker's tasks have
// no caller waiting to answer it), so a task is never input_required here
// and tasks/update has nothing to deliver.

// declaresTasks reports whether a stateless request declares the extension
// in its per-request client capabilities.
func declaresTasks(msg *message) bool {
	caps, _ := parseObject(msg.metaRaw(jsonrpc.MetaClientCapabilities))
	ext, _ := parseObject(caps.get("extensions"))
	return ext.get(jsonrpc.ExtensionTasks) != nil
}

// needsTasks is the -32021 of a request that needs the extension.
func needsTasks(what string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{jsonrpc.ExtensionTasks: map[string]any{}}}})
	return &jsonrpc.Error{Code: jsonrpc.CodeMissingCapability, Message: what + ": declare the " + jsonrpc.ExtensionTasks + " extension in _meta " + jsonrpc.MetaClientCapabilities, Data: data}
}

// extCaps turns the capabilities of a 2025-11-25 server description into
// the stateless revision's: tasks become the extension.
func extCaps(caps json.RawMessage) json.RawMessage {
	o, err := parseObject(caps)
	if err != nil || o.get("tasks") == nil {
		return caps
	}
	ext, _ := parseObject(o.get("extensions"))
	return o.without("tasks").set("extensions", ext.set(jsonrpc.ExtensionTasks, json.RawMessage(`{}`)).bytes()).bytes()
}

// callToolExt answers a stateless tools/call under the extension's rules.
func (ss *session) callToolExt(ctx context.Context, st *stream, msg *message) (json.RawMessage, error) {
	r, tool, p, err := ss.toolCall(ctx, st, msg)
	if err != nil {
		return nil, err
	}
	b := ss.srv.b
	declared := declaresTasks(msg)
	if declared {
		// The server decides: a tool that can run as a task does.
		if list, err := b.ToolList(ctx, r); err == nil {
			if s := toolTaskSupport(list.Tools, tool); s == "optional" || s == "required" {
				t, err := b.StartToolTask(ctx, r, tool, p.get("arguments"), 0)
				if err != nil {
					return nil, err
				}
				return taskExt(t).setString("resultType", "task").bytes(), nil
			}
		}
	}
	// Any other call runs plainly (the tool list is not read on this,
	// the common path); one of a task-only tool without the extension is
	// refused by the broker.
	r.NoImplicitTask = !declared
	out, err := b.CallTool(ctx, r, tool, p.get("arguments"), ss.progress(st, p))
	if errors.Is(err, broker.ErrTaskRequired) {
		return nil, needsTasks("tool " + p.str("name") + " runs only as a task")
	}
	return out, err
}

// toolTaskSupport is the execution.taskSupport of tool in a tools/list
// array ("" = forbidden, or no such tool).
func toolTaskSupport(tools json.RawMessage, tool string) string {
	els, _ := elements(tools)
	for _, el := range els {
		o, _ := parseObject(el)
		if o.str("name") != tool {
			continue
		}
		ex, _ := parseObject(o.get("execution"))
		return ex.str("taskSupport")
	}
	return ""
}

// taskExt is t in the extension's Task shape.
func taskExt(t broker.Task) object {
	o := object{}.setString("taskId", t.ID).setString("status", t.Status)
	if t.StatusMessage != "" {
		o = o.setString("statusMessage", t.StatusMessage)
	}
	if !t.Created.IsZero() {
		o = o.setString("createdAt", t.Created.UTC().Format(time.RFC3339Nano))
	}
	if u := t.Updated; !u.IsZero() || !t.Created.IsZero() {
		if u.IsZero() {
			u = t.Created
		}
		o = o.setString("lastUpdatedAt", u.UTC().Format(time.RFC3339Nano))
	}
	if t.TTL > 0 {
		o = o.set("ttlMs", json.RawMessage(strconv.FormatInt(t.TTL.Milliseconds(), 10)))
	}
	if t.PollInterval > 0 {
		o = o.set("pollIntervalMs", json.RawMessage(strconv.FormatInt(t.PollInterval.Milliseconds(), 10)))
	}
	return o
}

// taskExtMethod answers tasks/get, tasks/update and tasks/cancel under the
// extension.
func (ss *session) taskExtMethod(ctx context.Context, msg *message) (json.RawMessage, error) {
	if !declaresTasks(msg) {
		return nil, needsTasks(msg.Method)
	}
	p, err := msg.params()
	id := p.str("taskId")
	if err != nil || id == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg.Method + " needs a taskId"}
	}
	b := ss.srv.b
	t, err := b.TaskStatus(ctx, ss.caller, id)
	if err != nil {
		return nil, unknownTask(err, id)
	}
	switch msg.Method {
	case jsonrpc.MethodTasksUpdate:
		return json.RawMessage(`{}`), nil
	case jsonrpc.MethodTasksCancel:
		if !terminal(t.Status) {
			if _, err := b.CancelTask(ctx, ss.caller, id); err != nil && !isEnded(err) {
				return nil, unknownTask(err, id)
			}
		}
		return json.RawMessage(`{}`), nil
	}
	o := taskExt(t)
	switch t.Status {
	case "completed", "failed":
		res, err := b.TaskResult(ctx, ss.caller, id)
		if err != nil {
			e := ss.rpcError(err)
			raw, _ := json.Marshal(e)
			o = o.setString("status", "failed").set("error", raw)
			break
		}
		r, _ := parseObject(res)
		if meta, _ := parseObject(r.get("_meta")); meta.get(jsonrpc.MetaRelatedTask) != nil {
			rest := meta.without(jsonrpc.MetaRelatedTask)
			if len(rest) == 0 {
				r = r.without("_meta")
			} else {
				r = r.set("_meta", rest.bytes())
			}
		}
		o = o.set("result", r.bytes())
	}
	return o.bytes(), nil
}

func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// isEnded reports whether err says the task had ended already (a cancel
// racing the task's end).
func isEnded(err error) bool {
	var be *broker.Error
	return errors.As(err, &be) && be.Kind == broker.KindBadRequest
}

// unknownTask is the extension's answer to a task the caller has not: the
// broker's not-found as -32602, anything else as it is.
func unknownTask(err error, id string) error {
	var be *broker.Error
	if errors.As(err, &be) && be.Kind == broker.KindNotFound {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no task " + strconv.Quote(id)}
	}
	return err
}
