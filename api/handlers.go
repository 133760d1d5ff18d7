package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/go-chi/chi/v5"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

func (s *server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, wire.Health{Status: "ok", Version: s.version})
	return nil
}

func (s *server) whoami(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	cc := req.Context
	writeJSON(w, http.StatusOK, wire.Whoami{
		Caller:  callerDoc(req.Caller),
		Context: wire.DeclaredCtx{Cwd: cc.Cwd, Session: cc.Session, ParentSession: cc.ParentSession, Lease: cc.Lease, Pid: cc.Pid},
		Version: s.version,
		Daemon:  s.daemonInfo(req.Caller),
		Node:    s.node,
	})
	return nil
}

func (s *server) listServers(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	servers := []wire.Server{}
	for _, si := range s.b.Servers(c) {
		servers = append(servers, serverDoc(si))
	}
	writeJSON(w, http.StatusOK, wire.ServerList{Servers: servers})
	return nil
}

func (s *server) getServer(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	info, err := s.b.Server(param(r, "server"), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, serverDoc(info))
	return nil
}

func (s *server) listServerTools(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	l, err := s.b.ToolList(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.ServerTools{Server: req.Server, Tools: orEmpty(l.Tools), Instructions: l.Instructions})
	return nil
}

// serverList is one server's tools, split into Tool objects, and its
// instructions.
type serverList struct {
	tools        []json.RawMessage
	instructions string
}

// toolsOf lists the tools of each of servers in req's scope, concurrently:
// lists[i] and errs[i] are servers[i]'s (a failing server does not stop the
// others).
func (s *server) toolsOf(ctx context.Context, req broker.Request, servers []broker.ServerInfo) (lists []serverList, errs []error) {
	lists = make([]serverList, len(servers))
	errs = make([]error, len(servers))
	var wg sync.WaitGroup
	for i, si := range servers {
		wg.Go(func() {
			sreq := req
			sreq.Server = si.Name
			l, err := s.b.ToolList(ctx, sreq)
			lists[i].instructions = l.Instructions
			lists[i].tools, errs[i] = serverTools(l.Tools, err)
		})
	}
	wg.Wait()
	return lists, errs
}

func (s *server) listTools(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	if q := r.URL.Query(); q.Has("q") || q.Has("tag") {
		return s.searchTools(w, r, req)
	}
	servers, err := s.b.ServersAt(req) // the caller's config chain at its cwd
	if err != nil {
		return err
	}
	lists, errs := s.toolsOf(r.Context(), req, servers)
	out := wire.ToolList{Tools: []json.RawMessage{}}
	for i, si := range servers {
		if errs[i] != nil {
			p := s.problem(r, errs[i])
			if p.Server == "" {
				p.Server = si.Name
			}
			out.Errors = append(out.Errors, p)
			continue
		}
		for _, t := range lists[i].tools {
			out.Tools = append(out.Tools, wire.TagServer(si.Name, t))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// serverTools splits a broker tool list into its elements.
func serverTools(list json.RawMessage, err error) ([]json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(list, &tools); err != nil {
		return nil, &broker.Error{Kind: broker.KindChildFailed, Op: "list tools",
			Msg: "the server's tool list is not a JSON array", Err: err}
	}
	return tools, nil
}

func (s *server) callTool(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	args, err := s.readArguments(w, r)
	if err != nil {
		return err
	}
	tool := param(r, "tool")
	req.CheckTool = checkToolHash(req.Server, tool, r.Header.Get(wire.HeaderToolHash))
	if asTask, err := taskQuery(r); err != nil || asTask {
		if err != nil {
			return err
		}
		return s.startTask(w, r, req, tool, args)
	}
	if wantsEvents(r) {
		return s.streamCall(w, r, req, tool, args)
	}
	req.OnTarget = func(t broker.CallTarget) {
		js, _ := json.Marshal(callContextOf(t))
		w.Header().Set(wire.HeaderCallContext, string(js))
	}
	res, err := s.b.CallTool(r.Context(), req, tool, args, nil)
	if err != nil {
		return err
	}
	writeRaw(w, res)
	return nil
}

// callContextOf is where a call ran, as its answer tells the caller (a
// plain call's wire.HeaderCallContext, a streamed one's wire.StreamContext).
func callContextOf(t broker.CallTarget) wire.CallContext {
	return wire.CallContext{Server: t.Server, Tool: t.Tool, Scope: t.Scope, Key: t.Key, Instance: t.Instance, Config: t.Config}
}

// checkToolHash is the check of a call's wire.HeaderToolHash (nil without
// one): the tool the child lists must hash to it, else the caller's types
// of the tool are stale and the call is refused before the child sees it.
func checkToolHash(server, tool, want string) func(json.RawMessage) error {
	if want == "" {
		return nil
	}
	return func(def json.RawMessage) error {
		if wire.ToolHashOf(def) == want {
			return nil
		}
		return &broker.Error{Kind: broker.KindStaleClient, Op: "call", Server: server, Field: wire.HeaderToolHash,
			Msg: fmt.Sprintf("the schemas of tool %q changed since this client was generated (it knows them as %s; the server lists %s now), so its types no longer describe the call",
				tool, want, wire.ToolHashOf(def)),
			Hint: "regenerate the client with `mcpx clientgen ts`"}
	}
}

func (s *server) listResources(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	res, err := s.b.Resources(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.ResourceList{Resources: orEmpty(res), Server: req.Server})
	return nil
}

func (s *server) readResource(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	uri := r.URL.Query().Get("uri")
	if uri == "" {
		return &broker.Error{Kind: broker.KindBadRequest, Op: "read resource", Server: req.Server, Field: "uri",
			Msg: "the uri query parameter is required", Hint: "add ?uri=<resource uri> (see the server's resources)"}
	}
	res, err := s.b.ReadResource(r.Context(), req, uri)
	if err != nil {
		return err
	}
	writeRaw(w, res)
	return nil
}

func (s *server) listPrompts(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	res, err := s.b.Prompts(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.PromptList{Prompts: orEmpty(res), Server: req.Server})
	return nil
}

func (s *server) getPrompt(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	args, err := s.readPromptArguments(w, r)
	if err != nil {
		return err
	}
	res, err := s.b.GetPrompt(r.Context(), req, param(r, "prompt"), args)
	if err != nil {
		return err
	}
	writeRaw(w, res)
	return nil
}

func (s *server) listInstances(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	list := []wire.Instance{}
	for _, in := range s.b.Instances() {
		if doc, ok := instanceFor(c, in); ok {
			list = append(list, doc)
		}
	}
	writeJSON(w, http.StatusOK, wire.InstanceList{Instances: list, Stats: statsDoc(s.b.Stats()), Records: recordsDoc(c, s.b)})
	return nil
}

func (s *server) stopInstance(w http.ResponseWriter, r *http.Request) error {
	if c, _ := callerFrom(r.Context()); !c.Rights.Admin() {
		return &broker.Error{Kind: broker.KindForbidden, Op: "stop instance", Msg: "stopping instances needs admin rights"}
	}
	if err := s.b.StopInstance(r.Context(), param(r, "id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// param returns a path parameter, unescaped. chi matches against the escaped
// path when the request had escapes Go would not reproduce (RawPath), so a
// tool named "a/b" arrives as "a%2Fb" and must be unescaped here.
func param(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// openAPI answers the broker's OpenAPI document: generated from wire
// once per daemon, compressed by the router like every JSON answer.
func (s *server) openAPI(w http.ResponseWriter, r *http.Request) error {
	doc, err := s.openAPIDoc()
	if err != nil {
		return &broker.Error{Kind: broker.KindInternal, Op: "openapi", Msg: "cannot generate the OpenAPI document", Err: err}
	}
	writeRaw(w, doc)
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", wire.MediaJSON)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client is gone if this fails
}

// writeRaw answers 200 with a child's result bytes, unchanged.
func writeRaw(w http.ResponseWriter, b json.RawMessage) {
	w.Header().Set("Content-Type", wire.MediaJSON)
	w.WriteHeader(http.StatusOK)
	w.Write(b) //nolint:errcheck // the client is gone if this fails
}

// orEmpty turns a missing list into [] so documents never carry null lists.
func orEmpty(list json.RawMessage) json.RawMessage {
	if len(trimSpace(list)) == 0 || string(trimSpace(list)) == "null" {
		return json.RawMessage("[]")
	}
	return list
}
