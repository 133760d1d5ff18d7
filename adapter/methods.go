package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// The MCP methods a Transport answers from its Namespace, as the schema of
// 2025-11-25 shapes their results (tools/list's Tool, CallToolResult,
// resources/list's Resource, ReadResourceResult). Every list is one page:
// no nextCursor.

type wireTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

var emptyObjectSchema = json.RawMessage(`{"type":"object"}`)

func (t *Transport) listTools(ctx context.Context) (any, *jsonrpc.Error) {
	tools, err := t.ns.ListTools(ctx)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "listing tools: " + err.Error()}
	}
	out := make([]wireTool, 0, len(tools))
	for _, tool := range tools {
		in := tool.InputSchema
		if len(in) == 0 {
			in = emptyObjectSchema
		}
		out = append(out, wireTool{tool.Name, tool.Title, tool.Description, in, tool.OutputSchema, tool.Annotations})
	}
	return struct {
		Tools []wireTool `json:"tools"`
	}{out}, nil
}

type wireContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type wireResult struct {
	Content           []wireContent   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

func (t *Transport) callTool(ctx context.Context, params json.RawMessage) (any, *jsonrpc.Error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: params: " + err.Error()}
	}
	if p.Name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: params: name is missing"}
	}
	args := bytes.TrimSpace(p.Arguments)
	switch {
	case len(args) == 0 || string(args) == "null":
		args = json.RawMessage("{}")
	case args[0] != '{':
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call " + p.Name + ": arguments must be a JSON object"}
	}
	prog := t.progress(p.Meta.ProgressToken)
	defer prog.finish()
	res, err := t.ns.CallTool(ctx, Call{Name: p.Name, Arguments: args, Progress: prog.report})
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if res == nil {
		res = &Result{}
	}
	out := wireResult{Content: make([]wireContent, 0, len(res.Content)), StructuredContent: res.StructuredContent, IsError: res.IsError}
	for _, c := range res.Content {
		out.Content = append(out.Content, wireContent(c))
	}
	return out, nil
}

// progress is one call's progress reporter: notifications/progress with
// the request's token, none once the call has returned (or when the
// request carried no token).
type progress struct {
	t     *Transport
	token json.RawMessage // nil: the caller asked for none

	mu   sync.Mutex
	done bool // guarded by mu
}

func (t *Transport) progress(token json.RawMessage) *progress {
	if len(token) == 0 || string(token) == "null" {
		token = nil
	}
	return &progress{t: t, token: token}
}

func (p *progress) report(progress, total float64, message string) {
	if p.token == nil {
		return
	}
	params := struct {
		Token    json.RawMessage `json:"progressToken"`
		Progress float64         `json:"progress"`
		Total    float64         `json:"total,omitempty"`
		Message  string          `json:"message,omitempty"`
	}{p.token, progress, total, message}
	b, err := jsonrpc.Notification(jsonrpc.MethodProgress, params)
	if err != nil {
		return
	}
	// Under mu: no notification may follow the answer, which finish
	// precedes.
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		p.t.emit(b)
	}
}

func (p *progress) finish() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
}

type wireResource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

func listResources(ctx context.Context, r Resources) (any, *jsonrpc.Error) {
	list, err := r.ListResources(ctx)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "listing resources: " + err.Error()}
	}
	out := make([]wireResource, 0, len(list))
	for _, res := range list {
		name := res.Name
		if name == "" {
			name = res.URI // name is required
		}
		out = append(out, wireResource{res.URI, name, res.Title, res.Description, res.MimeType})
	}
	return struct {
		Resources []wireResource `json:"resources"`
	}{out}, nil
}

type wireContents struct {
	URI      string  `json:"uri"`
	MimeType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     []byte  `json:"blob,omitempty"` // base64, as encoding/json writes []byte
}

func readResource(ctx context.Context, r Resources, params json.RawMessage) (any, *jsonrpc.Error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.URI == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/read: params need a uri"}
	}
	contents, err := r.ReadResource(ctx, p.URI)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	out := make([]wireContents, 0, len(contents))
	for _, c := range contents {
		w := wireContents{URI: c.URI, MimeType: c.MimeType}
		if c.Blob != nil {
			w.Blob = c.Blob
		} else {
			text := c.Text
			w.Text = &text
		}
		out = append(out, w)
	}
	return struct {
		Contents []wireContents `json:"contents"`
	}{out}, nil
}
