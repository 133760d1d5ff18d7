package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// Requests routed to the child that serves them: on /mcp/{server} always
// that server's; on /mcp the server a tool's or prompt's name carries, or
// the one that listed a resource's URI (or a template it matches).

// lister is one of the broker's listings (Tools, Prompts, Resources,
// ResourceTemplates).
type lister func(b *broker.Broker, ctx context.Context, r broker.Request) (json.RawMessage, error)

// list answers a list method with every item in one page: on /mcp, each
// server's items, names prefixed (named) and descriptions saying which
// server they come from; a server that cannot list is left out (and
// logged), so one broken server does not hide the others.
func (ss *session) list(ctx context.Context, st *stream, key string, get lister, named bool) (json.RawMessage, error) {
	b := ss.srv.b
	cwd := ss.cwd(ctx, st)
	if ss.server != "" {
		r := ss.breqAt(cwd, ss.server, st)
		items, err := get(b, ctx, r)
		if err != nil {
			return nil, err
		}
		ss.track(r)
		return object{}.set(key, items).bytes(), nil
	}
	servers, err := b.ServersAt(ss.breqAt(cwd, "", nil))
	if err != nil {
		return nil, err
	}
	per := make([][]json.RawMessage, len(servers))
	var wg sync.WaitGroup
	for i, sv := range servers {
		wg.Go(func() {
			r := ss.breqAt(cwd, sv.Name, st)
			raw, err := get(b, ctx, r)
			if err != nil {
				ss.srv.log.Debug("mcp listing: a server left out", "server", sv.Name, "list", key, "err", err)
				return
			}
			ss.track(r)
			els, err := elements(raw)
			if err != nil {
				return
			}
			for j, el := range els {
				o, err := parseObject(el)
				if err != nil {
					continue
				}
				switch {
				case named:
					name := o.str("name")
					agg := AggregateName(sv.Name, name)
					ss.remember(agg, sv.Name, name)
					o = o.setString("name", agg)
					desc := "[" + sv.Name + "] " + o.str("description")
					o = o.setString("description", strings.TrimSpace(desc))
					if o.get("title") != nil {
						o = o.setString("title", o.str("title")+" ("+sv.Name+")")
					}
				case key == "resources":
					ss.rememberURI(o.str("uri"), sv.Name)
				case key == "resourceTemplates":
					ss.rememberTemplate(o.str("uriTemplate"), sv.Name)
				}
				els[j] = o.bytes()
			}
			per[i] = els
		})
	}
	wg.Wait()
	var all []json.RawMessage
	for _, els := range per {
		all = append(all, els...)
	}
	return object{}.set(key, array(all)).bytes(), nil
}

// routing is what the session learned from its listings: aggregate names,
// resource URIs and templates, and the instances it has used.
type routing struct {
	mu        sync.Mutex
	names     map[string][2]string // aggregate name → server, name
	uris      map[string]string    // resource URI → server
	templates map[string]string    // URI template → server
	tracked   map[string]bool      // server\x00cwd whose instance is noted
}

func (ss *session) remember(agg, server, name string) {
	ss.routes.mu.Lock()
	defer ss.routes.mu.Unlock()
	if ss.routes.names == nil {
		ss.routes.names = map[string][2]string{}
	}
	ss.routes.names[agg] = [2]string{server, name}
}

func (ss *session) rememberURI(uri, server string) {
	ss.routes.mu.Lock()
	defer ss.routes.mu.Unlock()
	if ss.routes.uris == nil {
		ss.routes.uris = map[string]string{}
	}
	ss.routes.uris[uri] = server
}

func (ss *session) rememberTemplate(tmpl, server string) {
	ss.routes.mu.Lock()
	defer ss.routes.mu.Unlock()
	if ss.routes.templates == nil {
		ss.routes.templates = map[string]string{}
	}
	ss.routes.templates[tmpl] = server
}

// track notes the instance r lands on, once per server and cwd, so that its
// notifications reach the session.
func (ss *session) track(r broker.Request) {
	k := r.Server + "\x00" + r.Context.Cwd
	ss.routes.mu.Lock()
	done := ss.routes.tracked[k]
	if ss.routes.tracked == nil {
		ss.routes.tracked = map[string]bool{}
	}
	ss.routes.tracked[k] = true
	ss.routes.mu.Unlock()
	if done {
		return
	}
	if t, err := ss.srv.b.Target(r); err == nil {
		ss.used(t.Server, t.Key)
	}
}

// resolveName maps an aggregate name to its server and the child's name:
// from the listing the session saw, else by its prefix (and, for a
// rewritten name, the server's listing).
func (ss *session) resolveName(ctx context.Context, cwd, name string, get lister) (server, child string, err error) {
	ss.routes.mu.Lock()
	sn, ok := ss.routes.names[name]
	ss.routes.mu.Unlock()
	if ok {
		return sn[0], sn[1], nil
	}
	b := ss.srv.b
	servers, err := b.ServersAt(ss.breqAt(cwd, "", nil))
	if err != nil {
		return "", "", err
	}
	names := make([]string, len(servers))
	for i, sv := range servers {
		names[i] = sv.Name
	}
	server = serverOf(name, names)
	if server == "" {
		return "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown name " + name + ": names on /mcp are <server>__<name>; list them again"}
	}
	rest := name[len(server)+len(Separator):]
	if AggregateName(server, rest) == name {
		// As a listing would have: the next call skips the server list.
		// Rights are the broker's to check, at each call.
		ss.remember(name, server, rest)
		return server, rest, nil
	}
	raw, err := get(b, ctx, ss.breqAt(cwd, server, nil))
	if err != nil {
		return "", "", err
	}
	els, _ := elements(raw)
	for _, el := range els {
		o, _ := parseObject(el)
		if n := o.str("name"); AggregateName(server, n) == name {
			return server, n, nil
		}
	}
	return "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown name " + name + " (server " + server + " lists no such)"}
}

// callTool calls a tool, passing the child's progress on with the client's
// own token.
func (ss *session) callTool(ctx context.Context, st *stream, msg *message) (json.RawMessage, error) {
	r, tool, p, err := ss.toolCall(ctx, st, msg)
	if err != nil {
		return nil, err
	}
	return ss.srv.b.CallTool(ctx, r, tool, p.get("arguments"), ss.progress(st, p))
}

// toolCall reads a tools/call: the broker request of the server it names,
// the tool's name there, and the params.
func (ss *session) toolCall(ctx context.Context, st *stream, msg *message) (broker.Request, string, object, error) {
	p, err := msg.params()
	if err != nil {
		return broker.Request{}, "", nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call params: " + err.Error()}
	}
	name := p.str("name")
	if name == "" {
		return broker.Request{}, "", nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs a name"}
	}
	cwd := ss.cwd(ctx, st)
	server, tool := ss.server, name
	if server == "" {
		if server, tool, err = ss.resolveName(ctx, cwd, name, (*broker.Broker).Tools); err != nil {
			return broker.Request{}, "", nil, err
		}
	}
	r := ss.breqAt(cwd, server, st)
	if ss.header != nil {
		if err := ss.checkParamHeaders(ctx, r, tool, msg.Params); err != nil {
			return broker.Request{}, "", nil, err
		}
	}
	ss.track(r) // before the call: the notices it causes (a log, an elicitation's completion) reach the session
	return r, tool, p, nil
}

// checkParamHeaders refuses a stateless tools/call whose Mcp-Param-*
// headers disagree with its arguments (SEP-2243): each argument the tool's
// input schema mirrors into a header ("x-mcp-header") must come with that
// header, equal to what the arguments give, and every such header must be
// plain printable ASCII (or the base64 wrapper).
func (ss *session) checkParamHeaders(ctx context.Context, r broker.Request, tool string, params json.RawMessage) error {
	mismatch := func(text string) error { return &jsonrpc.Error{Code: jsonrpc.CodeHeaderMismatch, Message: text} }
	for k, vs := range ss.header {
		if !strings.HasPrefix(k, jsonrpc.HeaderParamPrefix) {
			continue
		}
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if v[i] < 0x20 || v[i] > 0x7e {
					return mismatch(k + " holds a character that is not printable ASCII: send it as =?base64?…?=")
				}
			}
		}
	}
	list, err := ss.srv.b.ToolList(ctx, r)
	if err != nil {
		return nil // the call itself will say what is wrong
	}
	els, _ := elements(list.Tools)
	var def json.RawMessage
	for _, el := range els {
		if o, _ := parseObject(el); o.str("name") == tool {
			def = el
			break
		}
	}
	if def == nil || !jsonrpc.HasParamHeaders(def) {
		return nil
	}
	want := http.Header{}
	jsonrpc.SetHeaders(want, jsonrpc.MethodToolsCall, params, func(string) json.RawMessage { return def })
	for k, vs := range want {
		if !strings.HasPrefix(k, jsonrpc.HeaderParamPrefix) {
			continue
		}
		if got := ss.header.Get(k); got != vs[0] && decodeHeader(got) != decodeHeader(vs[0]) {
			return mismatch(k + " does not match the argument it mirrors")
		}
	}
	return nil
}

// progress returns the function that passes a child's progress on to the
// client under the token of its request (params); nil if it sent none.
func (ss *session) progress(st *stream, params object) func(json.RawMessage) {
	meta, _ := parseObject(params.get("_meta"))
	tok := meta.get("progressToken")
	if tok == nil {
		return nil
	}
	return func(p json.RawMessage) {
		o, err := parseObject(p)
		if err != nil {
			return
		}
		ss.notify(st, jsonrpc.MethodProgress, o.set("progressToken", tok))
	}
}

// forward passes a request on to server's child as it came.
func (ss *session) forward(ctx context.Context, st *stream, server, method string, params json.RawMessage) (json.RawMessage, error) {
	p, _ := parseObject(params)
	r := ss.breqAt(ss.cwd(ctx, st), server, st)
	ss.track(r)
	return ss.srv.b.Forward(ctx, r, method, params, ss.progress(st, p))
}

// forwardNamed passes on a request naming a prompt (prompts/get).
func (ss *session) forwardNamed(ctx context.Context, st *stream, msg *message, get lister) (json.RawMessage, error) {
	if ss.server != "" {
		return ss.forward(ctx, st, ss.server, msg.Method, msg.Params)
	}
	p, err := parseObject(msg.Params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg.Method + " params: " + err.Error()}
	}
	server, name, err := ss.resolveName(ctx, ss.cwd(ctx, st), p.str("name"), get)
	if err != nil {
		return nil, err
	}
	return ss.forward(ctx, st, server, msg.Method, p.setString("name", name).bytes())
}

// forwardResource passes on a request naming a resource by URI.
func (ss *session) forwardResource(ctx context.Context, st *stream, msg *message) (json.RawMessage, error) {
	if ss.server != "" {
		return ss.forward(ctx, st, ss.server, msg.Method, msg.Params)
	}
	var p struct {
		URI string `json:"uri"`
	}
	json.Unmarshal(msg.Params, &p) //nolint:errcheck // no uri: refused below
	server, err := ss.uriServer(ctx, st, p.URI)
	if err != nil {
		return nil, err
	}
	return ss.forward(ctx, st, server, msg.Method, msg.Params)
}

// uriServer is the server that listed uri, or whose template matches it
// best (the longest literal prefix); the listings are fetched once if the
// session has not seen them.
func (ss *session) uriServer(ctx context.Context, st *stream, uri string) (string, error) {
	if uri == "" {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the request needs a uri"}
	}
	for attempt := 0; attempt < 2; attempt++ {
		ss.routes.mu.Lock()
		server := ss.routes.uris[uri]
		if server == "" {
			best := -1
			for tmpl, s := range ss.routes.templates {
				prefix, _, _ := strings.Cut(tmpl, "{")
				if strings.HasPrefix(uri, prefix) && len(prefix) > best {
					best, server = len(prefix), s
				}
			}
		}
		ss.routes.mu.Unlock()
		if server != "" {
			return server, nil
		}
		if attempt == 0 {
			ss.list(ctx, st, "resources", (*broker.Broker).Resources, false)                 //nolint:errcheck // filled what it could
			ss.list(ctx, st, "resourceTemplates", (*broker.Broker).ResourceTemplates, false) //nolint:errcheck // likewise
		}
	}
	return "", &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: "resource not found: no server lists " + uri}
}

// complete routes completion/complete by its ref: a prompt's name or a
// resource template's URI.
func (ss *session) complete(ctx context.Context, st *stream, msg *message) (json.RawMessage, error) {
	if ss.server != "" {
		return ss.forward(ctx, st, ss.server, msg.Method, msg.Params)
	}
	p, err := parseObject(msg.Params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete params: " + err.Error()}
	}
	ref, _ := parseObject(p.get("ref"))
	switch ref.str("type") {
	case "ref/prompt":
		server, name, err := ss.resolveName(ctx, ss.cwd(ctx, st), ref.str("name"), (*broker.Broker).Prompts)
		if err != nil {
			return nil, err
		}
		return ss.forward(ctx, st, server, msg.Method, p.set("ref", ref.setString("name", name).bytes()).bytes())
	case "ref/resource":
		server, err := ss.uriServer(ctx, st, ref.str("uri"))
		if err != nil {
			return nil, err
		}
		return ss.forward(ctx, st, server, msg.Method, msg.Params)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref of type ref/prompt or ref/resource"}
}

// onInput answers a child's request for input by asking the client, on the
// stream of the call it belongs to, when the client can answer it.
func (ss *session) onInput(st *stream) broker.InputHandler {
	return func(ctx context.Context, req broker.InputRequest) (json.RawMessage, error) {
		if ss.id == "" {
			if ss.input == nil {
				return nil, errors.New("the client cannot be asked for input here")
			}
			return ss.input(ctx, req)
		}
		switch req.Method {
		case jsonrpc.MethodRootsList:
			if !ss.caps.roots {
				return nil, errors.New("the MCP client did not declare the roots capability")
			}
		case jsonrpc.MethodSample:
			if !ss.caps.sampling {
				return nil, errors.New("the MCP client did not declare the sampling capability")
			}
		case jsonrpc.MethodElicit:
			if id, url := urlElicitation(req.Params); url {
				if !ss.caps.elicitURL {
					return nil, errors.New("the MCP client did not declare elicitation mode url")
				}
				ss.noteElicited(id)
			} else if !ss.caps.elicitForm {
				return nil, errors.New("the MCP client did not declare elicitation mode form")
			}
		}
		resp, err := ss.ask(ctx, st, req.Method, req.Params, ss.srv.opts.InputWait)
		if err != nil {
			return nil, err
		}
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		}
		if err := json.Unmarshal(resp, &r); err != nil {
			return nil, err
		}
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	}
}
