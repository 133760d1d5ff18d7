package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/suggest"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/wire"
)

// The rest of MCP a server offers, over REST: resource templates,
// completion/complete and logging/setLevel (see wire/protocol.go).

func (s *server) listResourceTemplates(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	res, err := s.b.ResourceTemplates(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.ResourceTemplateList{ResourceTemplates: orEmpty(res), Server: req.Server})
	return nil
}

// complete serves POST /v1/servers/{server}/complete: the body, checked,
// is the child's completion/complete params.
func (s *server) complete(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	var cr wire.CompleteRequest
	if err := s.readDocument(w, r, &cr, "completion request"); err != nil {
		return err
	}
	if err := checkComplete(req.Server, cr); err != nil {
		return err
	}
	if cr.Ref.Type == wire.RefPrompt {
		if err := s.checkPrompt(r, req, cr.Ref.Name); err != nil {
			return err
		}
	}
	params, err := json.Marshal(cr)
	if err != nil {
		return err
	}
	res, err := s.b.Forward(r.Context(), req, jsonrpc.MethodComplete, params, nil)
	if err != nil {
		return err
	}
	writeRaw(w, res)
	return nil
}

// checkComplete names the first missing or wrong member of a completion
// request.
func checkComplete(server string, cr wire.CompleteRequest) error {
	bad := func(field, msg, hint string) error {
		return &broker.Error{Kind: broker.KindBadRequest, Op: "complete", Server: server, Field: field, Msg: msg, Hint: hint}
	}
	switch cr.Ref.Type {
	case wire.RefPrompt:
		if cr.Ref.Name == "" {
			return bad("ref.name", "a ref/prompt needs the prompt's name", "see the server's prompts")
		}
	case wire.RefResource:
		if cr.Ref.URI == "" {
			return bad("ref.uri", "a ref/resource needs the resource template's uri", "see the server's resource templates")
		}
	default:
		return bad("ref.type", fmt.Sprintf("ref.type %q is not %s or %s", cr.Ref.Type, wire.RefPrompt, wire.RefResource),
			`send {"ref":{"type":"ref/prompt","name":"…"},"argument":{"name":"…","value":"…"}}`)
	}
	if cr.Argument.Name == "" {
		return bad("argument.name", "the argument to complete has no name", "name a prompt argument or a template variable")
	}
	return nil
}

// checkPrompt answers not-found, with a did-you-mean, for a prompt the
// server does not list (its list comes from the schema cache when it can).
func (s *server) checkPrompt(r *http.Request, req broker.Request, name string) error {
	raw, err := s.b.Prompts(r.Context(), req)
	if err != nil {
		return err
	}
	var prompts []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &prompts) != nil {
		return nil // the child decides
	}
	names := make([]string, len(prompts))
	for i, p := range prompts {
		names[i] = p.Name
	}
	if slices.Contains(names, name) {
		return nil
	}
	hint := fmt.Sprintf("`mcpx prompts %s` lists its prompts", req.Server)
	if c := suggest.Closest(name, names); c != "" {
		hint = fmt.Sprintf("did you mean %q? %s", c, hint)
	}
	return &broker.Error{Kind: broker.KindNotFound, Op: "complete", Server: req.Server, Field: "ref.name",
		Msg: fmt.Sprintf("no prompt %q", name), Hint: hint}
}

// setLogLevel serves POST /v1/servers/{server}/logging: logging/setLevel
// to the child in the caller's scope. The level is the instance's, so
// every caller sharing it has the last level set.
func (s *server) setLogLevel(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	var lr wire.LogLevelRequest
	if err := s.readDocument(w, r, &lr, "log level"); err != nil {
		return err
	}
	if !slices.Contains(wire.MCPLogLevels(), lr.Level) {
		return &broker.Error{Kind: broker.KindBadRequest, Op: "set log level", Server: req.Server, Field: "level",
			Msg:  fmt.Sprintf("level %q is not an MCP log level", lr.Level),
			Hint: "use one of " + strings.Join(wire.MCPLogLevels(), ", ")}
	}
	params, err := json.Marshal(lr)
	if err != nil {
		return err
	}
	if _, err := s.b.Forward(r.Context(), req, jsonrpc.MethodSetLevel, params, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// notices is the call's broker.Notice watcher: the log messages of the
// instance the call runs on (server, key), and the completion of this
// call's own URL-mode elicitations, pushed as "<event>\n<data>" for
// sendNotices. It never blocks (push does not).
func (sc *streamedCall) notices(server, key string, push func(json.RawMessage)) func(broker.Notice) {
	return func(n broker.Notice) {
		if n.Server != server || n.Key != key {
			return
		}
		switch n.Method {
		case jsonrpc.MethodMessage:
			var m wire.LogMessage
			if json.Unmarshal(n.Params, &m) != nil {
				return
			}
			m.Server = server
			b, _ := json.Marshal(m)
			push(append([]byte(wire.StreamMessage+"\n"), b...))
		case jsonrpc.MethodElicitationComplete:
			var c wire.ElicitationComplete
			if json.Unmarshal(n.Params, &c) != nil || !sc.askedURL(c.ElicitationID) {
				return // another caller's elicitation
			}
			c.Server = server
			b, _ := json.Marshal(c)
			push(append([]byte(wire.StreamElicitationComplete+"\n"), b...))
		}
	}
}

// sendNotices writes the events notices queued.
func sendNotices(ev *eventWriter, items []json.RawMessage) {
	for _, it := range items {
		if name, data, ok := strings.Cut(string(it), "\n"); ok {
			ev.send(name, json.RawMessage(data))
		}
	}
}

// noteURL records that the call asked its caller to open the url-mode
// elicitation id, whose completion notice is then the call's to see.
func (sc *streamedCall) noteURL(id string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.urls == nil {
		sc.urls = map[string]bool{}
	}
	sc.urls[id] = true
}

// askedURL reports whether the call asked its caller to open elicitation id.
func (sc *streamedCall) askedURL(id string) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return id != "" && sc.urls[id]
}
