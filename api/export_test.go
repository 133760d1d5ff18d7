package api

import (
	"context"
	"net/http"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/wire"
)

// NewForOwner is New admitting unix-socket callers of uid owner only.
func NewForOwner(opts Options, owner int) http.Handler {
	s := newServer(opts)
	s.owner = owner
	return s.mount(routes(), opts)
}

// NewPanicking is New plus GET /panic, which panics.
func NewPanicking(opts Options) http.Handler {
	table := append([]route{{wire.Route{Method: "GET", Pattern: "/panic"},
		func(*server, http.ResponseWriter, *http.Request) error { panic("boom") }}}, routes()...)
	return newServer(opts).mount(table, opts)
}

// WriteProblem answers err as caller c would see it.
func WriteProblem(w http.ResponseWriter, r *http.Request, c broker.Caller, err error) {
	r = r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
	newServer(Options{}).writeProblem(w, r, err)
}

// NewColdToolDocs is New with its tool-document cache replaced by an
// empty one before every request, so every document is built anew (for
// benchmarks; requests must not overlap).
func NewColdToolDocs(opts Options) http.Handler {
	s := newServer(opts)
	h := s.mount(routes(), opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.toolDocs = openapi.NewCache(openapi.Options{Version: s.version}, 0)
		h.ServeHTTP(w, r)
	})
}

// NewWithToolDocs is New, also returning its tool-document cache, whose
// Builds the tests count.
func NewWithToolDocs(opts Options) (http.Handler, *openapi.Cache) {
	s := newServer(opts)
	return s.mount(routes(), opts), s.toolDocs
}
