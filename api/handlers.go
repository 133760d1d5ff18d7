package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sync"

	"github.com/go-chi/chi/v5"

	"mcpx.dev/mcpx/broker"
)

func (s *server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.version})
	return nil
}

// Whoami is the /v1/whoami document.
type Whoami struct {
	Caller  broker.Caller `json:"caller"`
	Context DeclaredCtx   `json:"context"`
	Version string        `json:"version"`
}

// DeclaredCtx is the caller context as the broker received it from the
// headers (after dropping what it does not trust, such as a remote pid).
type DeclaredCtx struct {
	Cwd           string `json:"cwd,omitempty"`
	Session       string `json:"session,omitempty"`
	ParentSession string `json:"parentSession,omitempty"`
	Lease         string `json:"lease,omitempty"`
	Pid           int    `json:"pid,omitempty"`
}

func (s *server) whoami(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	cc := req.Context
	writeJSON(w, http.StatusOK, Whoami{
		Caller:  req.Caller,
		Context: DeclaredCtx{cc.Cwd, cc.Session, cc.ParentSession, cc.Lease, cc.Pid},
		Version: s.version,
	})
	return nil
}

func (s *server) listServers(w http.ResponseWriter, r *http.Request) error {
	servers := s.b.Servers()
	if servers == nil {
		servers = []broker.ServerInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": servers})
	return nil
}

func (s *server) getServer(w http.ResponseWriter, r *http.Request) error {
	info, err := s.b.Server(param(r, "server"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (s *server) listServerTools(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	tools, err := s.b.Tools(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"server": req.Server, "tools": orEmpty(tools)})
	return nil
}

// ToolList is the /v1/tools document: every server's tools, each an MCP Tool
// object with a "server" member added, and a problem for each server whose
// tools could not be listed.
type ToolList struct {
	Tools  []json.RawMessage `json:"tools"`
	Errors []*Problem        `json:"errors,omitempty"`
}

func (s *server) listTools(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	servers := s.b.Servers()
	tools := make([][]json.RawMessage, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, si := range servers {
		wg.Go(func() {
			sreq := req
			sreq.Server = si.Name
			tools[i], errs[i] = serverTools(s.b.Tools(r.Context(), sreq))
		})
	}
	wg.Wait()
	out := ToolList{Tools: []json.RawMessage{}}
	for i, si := range servers {
		if errs[i] != nil {
			p := s.problem(r, errs[i])
			if p.Server == "" {
				p.Server = si.Name
			}
			out.Errors = append(out.Errors, p)
			continue
		}
		for _, t := range tools[i] {
			out.Tools = append(out.Tools, tagServer(si.Name, t))
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

// tagServer adds "server":name as the first member of a JSON object,
// leaving the rest of its bytes as the child sent them.
func tagServer(name string, obj json.RawMessage) json.RawMessage {
	tag, _ := json.Marshal(name)
	rest := trimSpace(obj)
	if len(rest) < 2 || rest[0] != '{' {
		return obj
	}
	out := make([]byte, 0, len(rest)+len(tag)+11)
	out = append(out, `{"server":`...)
	out = append(out, tag...)
	inner := trimSpace(rest[1:])
	if len(inner) > 0 && inner[0] != '}' {
		out = append(out, ',')
	}
	return append(out, inner...)
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
	if wantsEvents(r) {
		return s.streamCall(w, r, req, tool, args)
	}
	res, err := s.b.CallTool(r.Context(), req, tool, args, nil)
	if err != nil {
		return err
	}
	writeRaw(w, res)
	return nil
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
	writeJSON(w, http.StatusOK, map[string]any{"server": req.Server, "resources": orEmpty(res)})
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
	writeJSON(w, http.StatusOK, map[string]any{"server": req.Server, "prompts": orEmpty(res)})
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
	list := s.b.Instances()
	if list == nil {
		list = []broker.Instance{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"instances": list})
	return nil
}

func (s *server) stopInstance(w http.ResponseWriter, r *http.Request) error {
	if c, _ := callerFrom(r.Context()); !c.Admin {
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client is gone if this fails
}

// writeRaw answers 200 with a child's result bytes, unchanged.
func writeRaw(w http.ResponseWriter, b json.RawMessage) {
	w.Header().Set("Content-Type", "application/json")
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
