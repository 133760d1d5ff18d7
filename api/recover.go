package api

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"mcpx.dev/mcpx/broker"
)

// recoverer turns a panic in a handler into a logged 500 problem, so one bad
// request never takes the daemon down. If the response had already begun,
// the connection is aborted instead: a truncated body must not look complete.
func (s *server) recoverer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path,
				"panic", v, "stack", string(debug.Stack()))
			if tw.wrote {
				panic(http.ErrAbortHandler)
			}
			s.writeProblem(w, r, &broker.Error{Kind: broker.KindInternal, Op: "serve", Err: fmt.Errorf("panic: %v", v)})
		}()
		h.ServeHTTP(tw, r)
	})
}

// trackingWriter records whether the response has begun.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) {
	if code >= 200 {
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's flusher.
func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
