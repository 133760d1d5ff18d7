package mcp

import (
	"context"
	"encoding/json"
	"strings"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// Code mode (docs/mcp.md, "Code mode"): /mcp may offer two tools instead
// of, or beside, every server's: search, which answers TypeScript
// signatures of the caller's tools within a token budget, and run, which
// runs a snippet as `mcpx exec` does, with every server's client in scope,
// in the caller's scope, session and rights. A big catalog then costs a
// client two tool definitions, not hundreds. Package api implements both
// (it has the catalog and the script runner): Server.SetCode.

// Code runs code mode's tools for a caller. Each returns a tools/call
// result whole.
type Code interface {
	// Search answers search's arguments: query (words; "" = the catalog),
	// limit (hits; 0 = a default) and budget (tokens; 0 = a default).
	Search(ctx context.Context, r broker.Request, query string, limit, budget int) (json.RawMessage, error)
	// Run runs code, a snippet, for the caller of r, who may run code
	// (Rights.Code).
	Run(ctx context.Context, r broker.Request, code string) (json.RawMessage, error)
}

// SetCode gives the endpoint code mode's tools; nil = no code mode. It is
// called once, before the endpoint serves (package api's New).
func (s *Server) SetCode(c Code) { s.code = c }

// Code mode's tool names, as a client of /mcp calls them. A server's tool
// on /mcp is always named <server>__<tool>, so neither can clash with one.
const (
	ToolSearch = "search"
	ToolRun    = "run"
)

// surface says what the session's tools/list holds: code mode's tools,
// every server's, or both. Its mode is the one the client asked for
// (/mcp?mode=), else its caller's grant's (mcpMode), else the config's;
// run needs the caller's right to run code, without which code mode is off.
func (ss *session) surface() (code, tools bool) {
	if ss.server != "" || ss.srv.code == nil {
		return false, true
	}
	mode := ss.mode
	if mode == "" {
		mode = ss.caller.Rights.MCPMode()
	}
	if mode == "" {
		mode = ss.srv.b.CodeMode().Mode
	}
	if !ss.caller.Rights.Code() {
		return false, true
	}
	switch mode {
	case "code":
		return true, false
	case "both":
		return true, true
	}
	return false, true
}

// codeTools are code mode's tool definitions.
var codeTools = []json.RawMessage{
	json.RawMessage(`{"name":"search","title":"Search the tools","description":"Search the tools of every server you may use, by words naming what you want done (an empty query lists the catalog). Answers each match as a TypeScript signature with its description: call them from the code you give run, as written (await server.tool({...})). Results are the tools' own (content, structuredContent).","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"words naming what you want done, e.g. \"add numbers\""},"limit":{"type":"integer","minimum":1,"maximum":100,"description":"the most matches to answer (default 20)"},"budget":{"type":"integer","minimum":100,"maximum":100000,"description":"the answer's size in tokens, about 4 characters each (default 2000)"}}},"annotations":{"readOnlyHint":true,"openWorldHint":false}}`),
	json.RawMessage(`{"name":"run","title":"Run TypeScript","description":"Run TypeScript (or JavaScript) as the body of an async function, with every server you may use in scope as an object whose methods are its tools, as search names them; return a value to get it back as JSON. Example: return (await demo.add({a: 1, b: 2})).structuredContent. Calls many tools in one turn, loops, filters and joins their results before they reach you. log.info(...) records go to the answer's logs. Bounded in time and output; it runs on the broker's machine with your rights and no more.","inputSchema":{"type":"object","properties":{"code":{"type":"string","description":"the function body; a single expression is returned as it is"}},"required":["code"]},"annotations":{"openWorldHint":true}}`),
}

// listTools answers tools/list: code mode's tools and/or every server's.
func (ss *session) listTools(ctx context.Context, st *stream) (json.RawMessage, error) {
	code, tools := ss.surface()
	if !code {
		return ss.list(ctx, st, "tools", (*broker.Broker).Tools, true)
	}
	all := codeTools
	if tools {
		res, err := ss.list(ctx, st, "tools", (*broker.Broker).Tools, true)
		if err != nil {
			return nil, err
		}
		o, err := parseObject(res)
		if err != nil {
			return nil, err
		}
		els, err := elements(o.get("tools"))
		if err != nil {
			return nil, err
		}
		all = append(append([]json.RawMessage{}, codeTools...), els...)
	}
	return object{}.set("tools", array(all)).bytes(), nil
}

// codeCall answers a tools/call of search or run when code mode is on
// (handled true); any other call is not its.
func (ss *session) codeCall(ctx context.Context, st *stream, msg *message) (res json.RawMessage, handled bool, err error) {
	p, perr := msg.params()
	if perr != nil {
		return nil, false, nil
	}
	name := p.str("name")
	if name != ToolSearch && name != ToolRun {
		return nil, false, nil
	}
	if code, _ := ss.surface(); !code {
		return nil, false, nil
	}
	var args struct {
		Query  string `json:"query"`
		Limit  int    `json:"limit"`
		Budget int    `json:"budget"`
		Code   string `json:"code"`
	}
	if a := p.get("arguments"); a != nil {
		if err := json.Unmarshal(a, &args); err != nil {
			return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: name + ": arguments: " + err.Error()}
		}
	}
	r := ss.breqAt(ss.cwd(ctx, st), "", st)
	if name == ToolSearch {
		res, err = ss.srv.code.Search(ctx, r, args.Query, args.Limit, args.Budget)
		return res, true, err
	}
	if strings.TrimSpace(args.Code) == "" {
		return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `run needs code, e.g. {"code": "return (await demo.add({a: 1, b: 2})).structuredContent"}`}
	}
	res, err = ss.srv.code.Run(ctx, r, args.Code)
	return res, true, err
}
