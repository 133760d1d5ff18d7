package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/wire"
)

// mounted lists "METHOD pattern" of every route the router serves, as
// chi.Walk finds them.
func mounted(t *testing.T, r chi.Router) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// documented lists "METHOD path" of every operation of an OpenAPI document.
func documented(t *testing.T, doc []byte) map[string]bool {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for path, item := range d.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				out[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	return out
}

// drift lists the routes without an operation and the operations without a
// route.
func drift(mounted, documented map[string]bool) []string {
	var out []string
	for r := range mounted {
		if !documented[r] {
			out = append(out, "mounted, not documented: "+r)
		}
	}
	for op := range documented {
		if !mounted[op] {
			out = append(out, "documented, not mounted: "+op)
		}
	}
	slices.Sort(out)
	return out
}

// The routes the router mounts are exactly the operations of the OpenAPI
// document it serves.
func TestOpenAPIMatchesMountedRoutes(t *testing.T) {
	s := newServer(Options{})
	doc, err := s.openAPIDoc()
	if err != nil {
		t.Fatal(err)
	}
	m, d := mounted(t, s.router(routes())), documented(t, doc)
	if len(m) != len(wire.Routes()) {
		t.Errorf("chi.Walk found %d routes, the table has %d", len(m), len(wire.Routes()))
	}
	for _, problem := range drift(m, d) {
		t.Error(problem)
	}
}

// The drift check fails on an operation that is not mounted, and on a
// mounted route that is not documented.
func TestOpenAPIDriftIsCaught(t *testing.T) {
	s := newServer(Options{})
	doc, err := openapi.Broker(openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	d["paths"].(map[string]any)["/v1/unmounted"] = map[string]any{"get": map[string]any{"operationId": "unmounted"}}
	withExtra, _ := json.Marshal(d)
	got := drift(mounted(t, s.router(routes())), documented(t, withExtra))
	if !slices.Equal(got, []string{"documented, not mounted: GET /v1/unmounted"}) {
		t.Errorf("an unmounted operation: drift = %q", got)
	}

	extra := append(routes(), route{Route: wire.Route{Method: "PUT", Pattern: "/v1/undocumented", Name: "undocumented"}})
	got = drift(mounted(t, s.router(extra)), documented(t, doc))
	if !slices.Equal(got, []string{"mounted, not documented: PUT /v1/undocumented"}) {
		t.Errorf("an undocumented route: drift = %q", got)
	}
}
