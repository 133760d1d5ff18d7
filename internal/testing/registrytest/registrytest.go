// Package registrytest is a local MCP registry for tests, on loopback,
// speaking the API of the registry's published OpenAPI document.
//
//	reg := registrytest.New(t, registrytest.Server{JSON: serverJSON, Latest: true})
//	c := &registry.Client{BaseURL: reg.URL}
//
// A local MCP registry speaking the API of the registry's published
// OpenAPI document (docs/reference/api/openapi.yaml of
// modelcontextprotocol/registry, info.version "2025-12-01"): GET
// /v0.1/servers with search, cursor, limit and version; GET
// /v0.1/servers/{serverName}/versions; GET
// /v0.1/servers/{serverName}/versions/{version} with "latest". Answers are
// ServerList and ServerResponse objects; errors {"error": …}.
package registrytest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// Server is one version in the registry: a server.json and whether it is
// the latest of its name.
type Server struct {
	JSON   string // the server.json
	Latest bool
	Status string // "" = active
}

// Registry is the running registry; it is closed at the test's cleanup.
type Registry struct {
	URL     string // its base URL, http://127.0.0.1:PORT
	servers []Server
}

// New starts a registry of servers.
func New(t testing.TB, servers ...Server) *Registry {
	reg := &Registry{servers: servers}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v0.1/servers", reg.list)
	mux.HandleFunc("GET /v0.1/servers/{serverName}/versions", reg.versions)
	mux.HandleFunc("GET /v0.1/servers/{serverName}/versions/{version}", reg.version)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	reg.URL = srv.URL
	return reg
}

// response is the ServerResponse of s.
func (s Server) response() map[string]any {
	var detail map[string]any
	if err := json.Unmarshal([]byte(s.JSON), &detail); err != nil {
		panic(err)
	}
	status := s.Status
	if status == "" {
		status = "active"
	}
	return map[string]any{"server": detail, "_meta": map[string]any{
		"io.modelcontextprotocol.registry/official": map[string]any{
			"status": status, "isLatest": s.Latest,
			"publishedAt": "2026-09-01T10:00:00Z", "updatedAt": "2026-09-01T10:00:00Z",
		},
	}}
}

func (s Server) name() string {
	var d struct{ Name, Version string }
	json.Unmarshal([]byte(s.JSON), &d) //nolint:errcheck // checked by response
	return d.Name
}

func (s Server) version() string {
	var d struct{ Name, Version string }
	json.Unmarshal([]byte(s.JSON), &d) //nolint:errcheck // checked by response
	return d.Version
}

func (reg *Registry) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var match []map[string]any
	for _, s := range reg.servers {
		if !strings.Contains(s.name(), q.Get("search")) {
			continue
		}
		if v := q.Get("version"); (v == "latest" && !s.Latest) || (v != "" && v != "latest" && v != s.version()) {
			continue
		}
		match = append(match, s.response())
	}
	start, _ := strconv.Atoi(q.Get("cursor"))
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 30
	}
	end := min(start+limit, len(match))
	start = min(start, end)
	meta := map[string]any{"count": end - start}
	if end < len(match) {
		meta["nextCursor"] = strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": append([]map[string]any{}, match[start:end]...), "metadata": meta})
}

func (reg *Registry) versions(w http.ResponseWriter, r *http.Request) {
	var out []map[string]any
	for _, s := range reg.servers {
		if s.name() == r.PathValue("serverName") {
			out = append(out, s.response())
		}
	}
	if len(out) == 0 {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "Server not found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": out, "metadata": map[string]any{"count": len(out)}})
}

func (reg *Registry) version(w http.ResponseWriter, r *http.Request) {
	for _, s := range reg.servers {
		v := r.PathValue("version")
		if s.name() == r.PathValue("serverName") && (v == s.version() || (v == "latest" && s.Latest)) {
			writeJSON(w, http.StatusOK, s.response())
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"error": "Server not found"})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // a test server
}
