package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/clientgen"
	"mcpx.dev/mcpx/internal/suggest"
	"mcpx.dev/mcpx/wire"
)

// typeScriptClient answers the generated TypeScript client of the caller's
// servers (all it may use, or those named by ?servers=a,b), from the tool
// lists of the children in the caller's scope, as /v1/tools lists them. A
// server whose tools cannot be listed is named in the module's header and
// left out; a server named in ?servers that does not exist is a 404.
func (s *server) typeScriptClient(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	servers, err := s.b.ServersAt(req)
	if err != nil {
		return err
	}
	if q := r.URL.Query().Get("servers"); q != "" {
		var picked []broker.ServerInfo
		for _, name := range strings.Split(q, ",") {
			name = strings.TrimSpace(name)
			if name == "" || slices.ContainsFunc(picked, func(si broker.ServerInfo) bool { return si.Name == name }) {
				continue
			}
			nreq := req
			nreq.Server = name
			si, err := s.b.ServerAt(nreq)
			if err != nil {
				return err
			}
			picked = append(picked, si)
		}
		servers = picked
	}

	lists, errs := s.toolsOf(r.Context(), req, servers)

	opts := clientgen.ClientOptions{Broker: s.brokerName(), Cwd: req.Context.Cwd}
	for i, si := range servers {
		if errs[i] != nil {
			opts.Failed = append(opts.Failed, clientgen.FailedServer{Server: si.Name, Reason: s.problem(r, errs[i]).Detail})
			continue
		}
		opts.Servers = append(opts.Servers, clientgen.Server{Name: si.Name, Instructions: lists[i].instructions, Prelude: si.Prelude})
		for _, raw := range lists[i].tools {
			var t struct {
				Name         string          `json:"name"`
				Description  string          `json:"description"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			}
			if err := json.Unmarshal(raw, &t); err != nil || t.Name == "" {
				opts.Failed = append(opts.Failed, clientgen.FailedServer{Server: si.Name,
					Reason: "a tool in its list is not an MCP Tool object with a name"})
				continue
			}
			opts.Tools = append(opts.Tools, clientgen.Tool{Server: si.Name, Name: t.Name, Description: t.Description,
				InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
		}
	}
	f, problems := clientgen.Client(opts)
	for _, p := range problems {
		s.log.Debug("client generation: schema part left loose", "problem", p.String())
	}
	writeTypeScript(w, r, f.Source)
	return nil
}

// writeTypeScript answers a generated module with its ETag (a hash of the
// source: the same tools give the same bytes), or 304 Not Modified if the
// request's If-None-Match names it, so that a script runner or an editor
// polling for a fresh client is sent it only when a tool changed.
func writeTypeScript(w http.ResponseWriter, r *http.Request, src []byte) {
	sum := sha256.Sum256(src)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", etag)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", wire.MediaTypeScript+"; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write(src) //nolint:errcheck // the client is gone if this fails
}

// brokerName says which broker generated a client, for its header: the
// version, and the daemon's loopback URL when there is one.
func (s *server) brokerName() string {
	name := "mcpx " + s.version
	if s.daemon != nil && s.daemon.Info.Address != "" {
		name += fmt.Sprintf(" at http://%s (pid %d)", s.daemon.Info.Address, s.daemon.Info.Pid)
	}
	return name
}

// types answers the TypeScript declarations of one server's tools
// (?server=), or of one of them (?tool=), from the tool list of the child in
// the caller's scope: the config's prelude as comments, then the namespace,
// its doc comment the server's instructions unless ?instructions=false.
func (s *server) types(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	req.Server = q.Get("server")
	tool := q.Get("tool")
	withInstructions := true
	if v := q.Get("instructions"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return &broker.Error{Kind: broker.KindBadRequest, Op: "types", Field: "instructions",
				Msg: fmt.Sprintf("instructions=%q is not a boolean", v), Hint: "use instructions=false to leave them out"}
		}
		withInstructions = b
	}
	si, err := s.b.ServerAt(req)
	if err != nil {
		return err
	}
	l, err := s.b.ToolList(r.Context(), req)
	if err != nil {
		return err
	}
	raws, err := serverTools(l.Tools, nil)
	if err != nil {
		return err
	}
	opts := clientgen.TypesOptions{Server: clientgen.Server{Name: si.Name, Prelude: si.Prelude}, Tool: tool}
	if v := q.Get("only"); v != "" {
		opts.Only = strings.Split(v, ",")
	}
	if v := q.Get("depth"); v != "" {
		if opts.Depth, err = strconv.Atoi(v); err != nil || opts.Depth < 1 {
			return &broker.Error{Kind: broker.KindBadRequest, Op: "types", Field: "depth",
				Msg: fmt.Sprintf("depth=%q is not a number of levels", v), Hint: "give depth a whole number, 1 or more"}
		}
	}
	if withInstructions {
		opts.Server.Instructions = l.Instructions
	}
	var names []string
	for _, raw := range raws {
		var t struct {
			Name         string          `json:"name"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if json.Unmarshal(raw, &t) != nil || t.Name == "" {
			continue // not a Tool: nothing to declare
		}
		names = append(names, t.Name)
		opts.Tools = append(opts.Tools, clientgen.Tool{Server: si.Name, Name: t.Name, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
	}
	f, problems, found := clientgen.Types(opts)
	if !found {
		for _, w := range append(slices.Clone(opts.Only), tool) {
			if w != "" && !slices.Contains(names, w) {
				tool = w
				break
			}
		}
		hint := fmt.Sprintf("its tools: %s", strings.Join(names, ", "))
		if s := suggest.Closest(tool, names); s != "" {
			hint = fmt.Sprintf("did you mean %q? %s", s, hint)
		}
		if len(names) == 0 {
			hint = "it lists no tools"
		}
		return &broker.Error{Kind: broker.KindNotFound, Op: "types", Server: si.Name, Field: "tool",
			Msg: fmt.Sprintf("no tool %q", tool), Hint: hint}
	}
	for _, p := range problems {
		s.log.Debug("types: schema part left loose", "problem", p.String())
	}
	writeTypeScript(w, r, f.Source)
	return nil
}
