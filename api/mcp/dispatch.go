package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"mcpx.dev/mcpx/observe/tracing"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// startCall registers one of the client's requests, so that
// notifications/cancelled can reach it; the context ends with the session.
func (ss *session) startCall(msg *message) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ss.ctx)
	done := ss.calls.Add(msg.ID, cancel)
	return ctx, func() {
		cancel()
		ss.touch() // before done: expired reads the calls first
		done()
	}
}

// notification handles one of the client's notifications.
func (ss *session) notification(msg *message) {
	switch msg.Method {
	case jsonrpc.MethodCancelled:
		ss.calls.Cancelled(msg.Params)
	case jsonrpc.MethodRootsListChanged:
		ss.rootsChanged()
	}
}

// initialize answers the handshake: the version (the client's if mcpx
// speaks it, else the latest), the capabilities, and the instructions.
func (ss *session) initialize(ctx context.Context, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "initialize params: " + err.Error()}
	}
	ss.version = jsonrpc.LatestHandshake
	if jsonrpc.IsHandshakeVersion(p.ProtocolVersion) {
		ss.version = p.ProtocolVersion
	}
	ss.caps = parseCaps(p.Capabilities)
	ss.clientName = clientName(p.ClientInfo)
	caps, info, instr := ss.serverDescription(ctx)
	res := object{}.setString("protocolVersion", ss.version).set("capabilities", caps).set("serverInfo", info)
	if instr != "" {
		res = res.setString("instructions", instr)
	}
	return res.bytes(), nil
}

// serverDescription is what initialize and server/discover say of the
// server: for /mcp/{server}, the child's capabilities, info and
// instructions; for /mcp, mcpx's, with every server's instructions merged.
func (ss *session) serverDescription(ctx context.Context) (caps, info json.RawMessage, instructions string) {
	b := ss.srv.b
	if ss.server != "" {
		// From the schema cache only: starting a child here, before the
		// client's roots are known, could start it in the wrong scope.
		r := ss.breqAt(ss.hdr.Cwd, ss.server, nil)
		if init, ok := b.CachedInitializeResult(ctx, r); ok {
			o, _ := parseObject(init)
			if c := o.get("capabilities"); c != nil {
				caps = c
			}
			info = o.get("serverInfo")
			instructions = o.str("instructions")
		}
		if caps == nil {
			caps = json.RawMessage(aggregateCaps)
		}
		if info == nil {
			info, _ = json.Marshal(map[string]string{"name": "mcpx/" + ss.server, "version": ss.srv.version})
		}
		return caps, info, instructions
	}
	info, _ = json.Marshal(map[string]string{"name": Name, "title": "mcpx broker", "version": ss.srv.version})
	var parts []string
	servers, _ := b.ServersAt(ss.breqAt(ss.hdr.Cwd, "", nil))
	for _, sv := range servers {
		line := "- " + sv.Name + Separator + "*: the tools of server " + sv.Name
		if sv.Description != "" {
			line += " (" + sv.Description + ")"
		}
		if init, ok := b.CachedInitializeResult(ctx, ss.breqAt(ss.hdr.Cwd, sv.Name, nil)); ok {
			o, _ := parseObject(init)
			if t := strings.TrimSpace(o.str("instructions")); t != "" {
				line += "\n  " + strings.ReplaceAll(t, "\n", "\n  ")
			}
		}
		parts = append(parts, line)
	}
	instructions = "mcpx brokers these MCP servers; each tool and prompt is named <server>__<name>, resources keep their URIs. Servers run in the directory of your first root.\n" + strings.Join(parts, "\n")
	return json.RawMessage(aggregateCaps), info, instructions
}

// aggregateCaps are the capabilities of /mcp (and of /mcp/{server} when
// the child's are not known).
// The broker serves tasks/list and tasks/cancel itself (tasks.go).
const aggregateCaps = `{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"completions":{},"logging":{},` +
	`"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}`

func parseCaps(raw json.RawMessage) clientCaps {
	var c struct {
		Roots *struct {
			ListChanged bool `json:"listChanged"`
		} `json:"roots"`
		Sampling    *json.RawMessage `json:"sampling"`
		Elicitation *struct {
			Form *json.RawMessage `json:"form"`
			URL  *json.RawMessage `json:"url"`
		} `json:"elicitation"`
	}
	json.Unmarshal(raw, &c) //nolint:errcheck // unreadable: no capabilities
	out := clientCaps{raw: raw, roots: c.Roots != nil, sampling: c.Sampling != nil}
	if o, err := parseObject(raw); err == nil {
		out.elicitation = o.get("elicitation")
	}
	if c.Roots != nil {
		out.rootsChanged = c.Roots.ListChanged
	}
	if c.Elicitation != nil {
		// An empty elicitation capability means form mode (spec 2025-11-25).
		out.elicitForm = c.Elicitation.Form != nil || c.Elicitation.URL == nil
		out.elicitURL = c.Elicitation.URL != nil
	}
	return out
}

func clientName(raw json.RawMessage) string {
	var ci struct {
		Name string `json:"name"`
	}
	json.Unmarshal(raw, &ci) //nolint:errcheck // no name
	return ci.Name
}

// breqAt is the broker request of the session's caller at cwd for server.
func (ss *session) breqAt(cwd, server string, st *stream) broker.Request {
	cc := ss.hdr
	cc.Cwd = cwd
	r := broker.Request{Caller: ss.caller, Context: cc, Server: server}
	if st != nil {
		r.OnInput = ss.onInput(st)
		ss.mu.Lock()
		level := ss.level
		ss.mu.Unlock()
		r.Capabilities = &broker.CallerCapabilities{Elicitation: ss.caps.elicitation, Sampling: ss.caps.sampling, LogLevel: level}
	}
	return r
}

// handle answers one request; the response message is returned whole.
func (ss *session) handle(ctx context.Context, st *stream, msg *message) []byte {
	if tracing.Enabled() {
		var sp trace.Span
		ctx, sp = ss.traceRequest(ctx, msg)
		defer sp.End()
	}
	if ss.id == "" {
		if v := msg.meta(jsonrpc.MetaProtocolVersion); v != "" && v != jsonrpc.StatelessVersion {
			data, _ := json.Marshal(map[string]any{"supported": []string{jsonrpc.StatelessVersion}, "requested": v})
			return rpcErrorMsg(msg.ID, jsonrpc.CodeUnsupportedVersion, "unsupported protocol version "+v, data)
		}
	}
	if l := msg.meta(jsonrpc.MetaLogLevel); ss.id == "" && slices.Contains(logLevels, l) {
		// A stateless client's level for this request (its session
		// is this request's).
		ss.mu.Lock()
		ss.level = l
		ss.mu.Unlock()
	}
	var res json.RawMessage
	var err error
	if ss.id == "" && rounds[msg.Method] {
		res, err = ss.statelessRound(ctx, st, msg)
	} else {
		res, err = ss.dispatch(ctx, st, msg)
	}
	if err != nil {
		e := ss.rpcError(err)
		return jsonrpc.AppendError(nil, msg.ID, e)
	}
	if ss.id == "" {
		res = statelessResult(msg.Method, res)
	}
	return resultMsg(msg.ID, res)
}

// cacheable are the results that carry the 2026-07-28 caching hints
// (SEP-2549).
var cacheable = map[string]bool{jsonrpc.MethodDiscover: true, jsonrpc.MethodToolsList: true, jsonrpc.MethodPromptsList: true,
	jsonrpc.MethodResourcesList: true, jsonrpc.MethodResourceTemplatesList: true, jsonrpc.MethodResourcesRead: true}

// statelessResult gives a result for a stateless client what the
// 2026-07-28 schema requires and a child of the handshake era (or mcpx's
// own listing) leaves out: resultType, and the caching hints, which are
// private and immediately stale (what mcpx lists depends on the caller).
func statelessResult(method string, res json.RawMessage) json.RawMessage {
	o, err := parseObject(res)
	if err != nil {
		return res
	}
	changed := false
	if o.get("resultType") == nil {
		o, changed = o.setString("resultType", "complete"), true
	}
	if cacheable[method] {
		if o.get("ttlMs") == nil {
			o, changed = o.set("ttlMs", json.RawMessage("0")), true
		}
		if o.get("cacheScope") == nil {
			o, changed = o.setString("cacheScope", "private"), true
		}
	}
	if !changed {
		return res
	}
	return o.bytes()
}

func (ss *session) dispatch(ctx context.Context, st *stream, msg *message) (json.RawMessage, error) {
	switch msg.Method {
	case jsonrpc.MethodPing:
		return json.RawMessage(`{}`), nil
	case jsonrpc.MethodDiscover:
		caps, info, instr := ss.serverDescription(ctx)
		caps = extCaps(caps) // server/discover is the stateless revision's
		meta, _ := json.Marshal(map[string]json.RawMessage{jsonrpc.MetaServerInfo: info})
		versions, _ := json.Marshal(jsonrpc.SupportedVersions())
		res := object{}.set("supportedVersions", versions).set("capabilities", caps)
		if instr != "" {
			res = res.setString("instructions", instr)
		}
		return res.set("_meta", meta).bytes(), nil
	case jsonrpc.MethodToolsList:
		return ss.listTools(ctx, st)
	case jsonrpc.MethodPromptsList:
		return ss.list(ctx, st, "prompts", (*broker.Broker).Prompts, true)
	case jsonrpc.MethodResourcesList:
		return ss.list(ctx, st, "resources", (*broker.Broker).Resources, false)
	case jsonrpc.MethodResourceTemplatesList:
		return ss.list(ctx, st, "resourceTemplates", (*broker.Broker).ResourceTemplates, false)
	case jsonrpc.MethodToolsCall:
		if res, ok, err := ss.codeCall(ctx, st, msg); ok {
			return res, err
		}
		if ss.id == "" {
			return ss.callToolExt(ctx, st, msg)
		}
		if isTaskCall(msg) {
			return ss.callToolAsTask(ctx, st, msg)
		}
		return ss.callTool(ctx, st, msg)
	case jsonrpc.MethodTasksGet, jsonrpc.MethodTasksUpdate, jsonrpc.MethodTasksCancel:
		if ss.id == "" {
			return ss.taskExtMethod(ctx, msg)
		}
		if msg.Method == jsonrpc.MethodTasksUpdate {
			break
		}
		return ss.task(ctx, msg)
	case jsonrpc.MethodTasksResult, jsonrpc.MethodTasksList:
		if ss.id == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: msg.Method + " is not in the " + jsonrpc.ExtensionTasks + " extension: tasks/get inlines the result"}
		}
		return ss.task(ctx, msg)
	case jsonrpc.MethodListen:
		return ss.listen(ctx, st, msg)
	case jsonrpc.MethodPromptsGet:
		return ss.forwardNamed(ctx, st, msg, (*broker.Broker).Prompts)
	case jsonrpc.MethodResourcesRead:
		return ss.forwardResource(ctx, st, msg)
	case jsonrpc.MethodResourcesSubscribe:
		return ss.subscribe(ctx, st, msg)
	case jsonrpc.MethodResourcesUnsubscribe:
		return ss.unsubscribe(msg)
	case jsonrpc.MethodComplete:
		return ss.complete(ctx, st, msg)
	case jsonrpc.MethodSetLevel:
		var p struct {
			Level string `json:"level"`
		}
		if json.Unmarshal(msg.Params, &p) != nil || !slices.Contains(logLevels, p.Level) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "level must be one of " + strings.Join(logLevels, ", ")}
		}
		ss.mu.Lock()
		ss.level = p.Level
		ss.mu.Unlock()
		if ss.server != "" {
			if _, err := ss.forward(ctx, st, ss.server, msg.Method, msg.Params); err != nil {
				ss.srv.log.Debug(jsonrpc.MethodSetLevel, "server", ss.server, "err", err)
			}
		}
		return json.RawMessage(`{}`), nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + msg.Method}
}

// rpcError turns an error into the JSON-RPC error the client sees: a
// child's own error as it sent it, a refusal as invalid params, the rest
// with the broker's caller-safe message (never its internal detail).
func (ss *session) rpcError(err error) *jsonrpc.Error {
	var re *jsonrpc.Error
	if errors.As(err, &re) {
		return re
	}
	var be *broker.Error
	if errors.As(err, &be) {
		if be.RPCCode != 0 {
			return &jsonrpc.Error{Code: be.RPCCode, Message: be.Msg, Data: be.RPCData}
		}
		msg := be.Msg
		if be.Server != "" && ss.server == "" {
			msg = "server " + be.Server + ": " + msg
		}
		if be.Hint != "" {
			msg += " (" + be.Hint + ")"
		}
		switch be.Kind {
		case broker.KindNotFound, broker.KindBadRequest, broker.KindForbidden:
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
		case broker.KindRateLimited:
			return rateLimitedError(msg, be)
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
	}
	if errors.Is(err, context.Canceled) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cancelled"}
	}
	ss.srv.log.Warn("mcp request failed", "session", ss.id, "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// listen serves subscriptions/listen (2026-07-28): the request stays open,
// its stream carrying the list changes the client asked for, until the
// client cancels it.
func (ss *session) listen(ctx context.Context, st *stream, msg *message) (json.RawMessage, error) {
	var p struct {
		Notifications *struct {
			Tools     bool `json:"toolsListChanged"`
			Prompts   bool `json:"promptsListChanged"`
			Resources bool `json:"resourcesListChanged"`
			// The resources whose updates the client wants (2026-07-28:
			// it replaces resources/subscribe; subscribe.go).
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || p.Notifications == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "subscriptions/listen needs notifications"}
	}
	n := p.Notifications
	want := map[string]bool{}
	if n.Tools {
		want[jsonrpc.MethodToolsListChanged] = true
	}
	if n.Prompts {
		want[jsonrpc.MethodPromptsListChanged] = true
	}
	if n.Resources {
		want[jsonrpc.MethodResourcesListChanged] = true
	}
	subID := msg.ID
	meta, _ := json.Marshal(map[string]json.RawMessage{jsonrpc.MetaSubscriptionID: subID})
	subs, honored := ss.listenResources(ctx, st, n.ResourceSubscriptions, meta)
	defer closeAll(subs)
	acked := map[string]any{"toolsListChanged": n.Tools, "promptsListChanged": n.Prompts, "resourcesListChanged": n.Resources}
	if n.ResourceSubscriptions != nil {
		acked["resourceSubscriptions"] = honored
	}
	ack, _ := json.Marshal(acked)
	ss.notify(st, jsonrpc.MethodListenAcknowledged, object{}.set("notifications", ack).set("_meta", meta))
	if len(want) > 0 || len(subs) > 0 {
		l := &listener{ss: ss, st: st, want: want, meta: meta}
		stop := ss.srv.addListener(l)
		<-ctx.Done()
		stop()
	}
	return object{}.set("_meta", meta).bytes(), nil
}
