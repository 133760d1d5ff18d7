package api

import (
	"net/http"
	"strings"
	"sync"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/openapi"
)

// The tool documents: /v1/servers/{server}/openapi.json and
// /v1/openapi.json. Each request lists the tools through the broker, as
// /v1/servers/{server}/tools does (in the caller's scope; the child's list
// is cached by its session), and the document is built only when that list
// changed (openapi.Cache, keyed by a hash of the list), then answered with
// its ETag, or 304 to a matching If-None-Match.

func (s *server) serverOpenAPI(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	info, err := s.b.ServerAt(req)
	if err != nil {
		return err
	}
	l, err := s.b.ToolList(r.Context(), req)
	if err != nil {
		return err
	}
	doc, err := s.toolDocs.Server(toolServer(info, l))
	if err != nil {
		return &broker.Error{Kind: broker.KindInternal, Op: "openapi", Server: req.Server, Msg: "cannot generate the server's OpenAPI document", Err: err}
	}
	writeDocument(w, r, doc)
	return nil
}

func (s *server) toolsOpenAPI(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	infos, err := s.b.ServersAt(req) // only the servers the caller may use
	if err != nil {
		return err
	}
	servers := make([]openapi.Server, len(infos))
	var wg sync.WaitGroup
	for i, si := range infos {
		wg.Go(func() {
			sreq := req
			sreq.Server = si.Name
			l, err := s.b.ToolList(r.Context(), sreq)
			servers[i] = toolServer(si, l)
			if err != nil {
				p := s.problem(r, err)
				if p.Server == "" {
					p.Server = si.Name
				}
				servers[i].Problem = p
			}
		})
	}
	wg.Wait()
	doc, err := s.toolDocs.Combined(servers)
	if err != nil {
		return &broker.Error{Kind: broker.KindInternal, Op: "openapi", Msg: "cannot generate the tools' OpenAPI document", Err: err}
	}
	writeDocument(w, r, doc)
	return nil
}

// toolServer is a server's part of a tool document: its tools and the
// instructions of the same child, which the documents carry as
// descriptions and x-mcp-instructions.
func toolServer(si broker.ServerInfo, l broker.ToolList) openapi.Server {
	return openapi.Server{Name: si.Name, Description: si.Description, Instructions: l.Instructions, Tools: orEmpty(l.Tools)}
}

// writeDocument answers a cached document with its ETag, or 304 Not
// Modified if the request's If-None-Match names it.
func writeDocument(w http.ResponseWriter, r *http.Request, doc openapi.Document) {
	w.Header().Set("ETag", doc.ETag)
	if etagMatches(r.Header.Get("If-None-Match"), doc.ETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeRaw(w, doc.JSON)
}

// etagMatches reports whether an If-None-Match header names etag (RFC 9110
// 13.1.2: a weak comparison, so W/"x" matches "x"; * matches anything).
func etagMatches(header, etag string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}
