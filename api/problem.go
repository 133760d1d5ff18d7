package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// problemKind is how one kind of error looks on the wire.
type problemKind struct {
	status int
	title  string
}

// Kinds the API adds to broker.Kind for failures only HTTP has.
const (
	kindTooLarge         broker.Kind = wire.KindTooLarge
	kindMethodNotAllowed broker.Kind = wire.KindMethodNotAllowed
	kindBodyTimeout      broker.Kind = wire.KindBodyTimeout
)

// problemKinds maps every problem kind of wire to its status and title; a
// broker.Kind is a wire kind of the same name (TestBrokerKindsAreWireKinds).
var problemKinds = func() map[broker.Kind]problemKind {
	m := map[broker.Kind]problemKind{}
	for _, pt := range wire.ProblemTypes() {
		m[broker.Kind(pt.Kind)] = problemKind{pt.Status, pt.Title}
	}
	return m
}()

var errMethodNotAllowed = &broker.Error{Kind: kindMethodNotAllowed, Op: "route",
	Msg: "method not allowed on this endpoint"}

// writeProblem answers err as problem+json. It is the only place errors
// become responses: the status, type and detail all come from problem.
func (s *server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := s.problem(r, err)
	h := w.Header()
	h.Set("Content-Type", wire.MediaProblem)
	h.Set("Cache-Control", "no-store")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p) //nolint:errcheck // the client is gone if this fails
}

// problem maps err to a problem document and logs it where that is useful.
// Only broker.Error.Msg and Hint reach the caller; Err (paths, stack text)
// is logged. Internal errors say "internal error" and nothing more.
func (s *server) problem(r *http.Request, err error) *wire.Problem {
	if errors.Is(context.Cause(r.Context()), errShuttingDown) {
		err = &broker.Error{Kind: broker.KindUnavailable, Op: "shut down", RetryAfter: time.Second, Err: err,
			Msg:  "the daemon shut down before this call finished (it ran past the drain limit)",
			Hint: "retry: the call was cancelled, and a restarted daemon will serve it"}
	}
	e := asBrokerError(err)
	pk, ok := problemKinds[e.Kind]
	if !ok {
		pk = problemKinds[broker.KindInternal]
	}
	p := &wire.Problem{
		Type:   wire.ProblemTypeBase + string(e.Kind),
		Title:  pk.title,
		Status: pk.status,
		Detail: e.Msg,
		// Private detail (commands, paths, URLs) is for the daemon's own
		// user; see below.
		Server:  e.Server,
		Field:   e.Field,
		RPCCode: e.RPCCode,
	}
	if !ok {
		p.Type = wire.ProblemTypeBase + string(broker.KindInternal)
	}
	if p.Detail == "" {
		p.Detail = pk.title
	}
	if e.Hint != "" {
		p.Detail += "; " + e.Hint
	}
	if c, ok := callerFrom(r.Context()); ok && c.Owner {
		p.StderrTail = e.StderrTail
		if e.Private != "" {
			p.Detail = e.Private
			if e.Hint != "" {
				p.Detail += "; " + e.Hint
			}
		}
	}
	if e.Kind == broker.KindExhausted || (e.Kind == broker.KindUnavailable && e.RetryAfter > 0) {
		p.RetryAfter = retryAfterSeconds(e.RetryAfter)
	}
	limitMembers(p, e)
	s.logProblem(r, p, e, err)
	if e.Kind == broker.KindInternal || !ok {
		p.Detail = "internal error"
		p.Field, p.StderrTail, p.RPCCode = "", "", 0
	}
	return p
}

func (s *server) logProblem(r *http.Request, p *wire.Problem, e *broker.Error, err error) {
	level := slog.LevelDebug
	switch {
	case p.Status == http.StatusInternalServerError:
		level = slog.LevelError
	case p.Status >= 500:
		level = slog.LevelWarn
	}
	s.log.Log(r.Context(), level, "request failed",
		"method", r.Method, "path", r.URL.Path, "status", p.Status,
		"kind", e.Kind, "op", e.Op, "server", e.Server, "err", err)
}

// asBrokerError returns err as a *broker.Error, classifying errors that did
// not come from the broker.
func asBrokerError(err error) *broker.Error {
	var be *broker.Error
	if errors.As(err, &be) {
		return be
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return &broker.Error{Kind: kindTooLarge, Op: "read body", Field: "body", Err: err,
			Msg:  "request body is larger than " + strconv.FormatInt(tooLarge.Limit, 10) + " bytes",
			Hint: "send smaller arguments"}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &broker.Error{Kind: broker.KindTimeout, Msg: "the request ran out of time", Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return &broker.Error{Kind: broker.KindCanceled, Msg: "the request was cancelled", Err: err}
	}
	return &broker.Error{Kind: broker.KindInternal, Err: err}
}

// retryAfterSeconds rounds d up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}
