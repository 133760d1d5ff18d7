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
)

// ProblemTypeBase prefixes every problem type URI; the suffix is the
// broker.Kind (or one of the API's own: too-large, method-not-allowed).
const ProblemTypeBase = "https://mcpx.dev/problems/"

// Problem is an RFC 9457 problem details document, with mcpx's extension
// members. Clients decode error responses (and `event: error` payloads) into it.
type Problem struct {
	Type   string `json:"type"`   // ProblemTypeBase + kind; stable
	Title  string `json:"title"`  // short, per type
	Status int    `json:"status"` // the HTTP status
	Detail string `json:"detail"` // what went wrong and how to fix it; caller-safe

	Server     string `json:"server,omitempty"`     // the server involved
	Field      string `json:"field,omitempty"`      // the request part or config field involved
	StderrTail string `json:"stderrTail,omitempty"` // the child's last stderr lines; local callers only
	RPCCode    int    `json:"rpcCode,omitempty"`    // the child's JSON-RPC error code
	RetryAfter int    `json:"retryAfter,omitempty"` // seconds; also sent as the Retry-After header
}

func (p *Problem) Error() string { return p.Detail }

// problemKind is how one kind of error looks on the wire.
type problemKind struct {
	status int
	title  string
}

// statusClientClosedRequest is nginx's 499: the caller disconnected, so
// nobody reads the answer; it only shows in logs and metrics.
const statusClientClosedRequest = 499

// Kinds the API adds to broker.Kind for failures only HTTP has.
const (
	kindTooLarge         broker.Kind = "too-large"
	kindMethodNotAllowed broker.Kind = "method-not-allowed"
)

var problemKinds = map[broker.Kind]problemKind{
	broker.KindBadRequest:  {http.StatusBadRequest, "Bad request"},
	broker.KindNotFound:    {http.StatusNotFound, "Not found"},
	broker.KindForbidden:   {http.StatusForbidden, "Forbidden"},
	broker.KindChildFailed: {http.StatusBadGateway, "Server failed"},
	broker.KindTimeout:     {http.StatusGatewayTimeout, "Timed out"},
	broker.KindExhausted:   {http.StatusServiceUnavailable, "Pool exhausted"},
	broker.KindUnavailable: {http.StatusServiceUnavailable, "Unavailable"},
	broker.KindCanceled:    {statusClientClosedRequest, "Client closed request"},
	broker.KindConfig:      {http.StatusInternalServerError, "Configuration error"},
	broker.KindInternal:    {http.StatusInternalServerError, "Internal error"},
	kindTooLarge:           {http.StatusRequestEntityTooLarge, "Request body too large"},
	kindMethodNotAllowed:   {http.StatusMethodNotAllowed, "Method not allowed"},
}

var errMethodNotAllowed = &broker.Error{Kind: kindMethodNotAllowed, Op: "route",
	Msg: "method not allowed on this endpoint"}

// writeProblem answers err as problem+json. It is the only place errors
// become responses: the status, type and detail all come from problem.
func (s *server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := s.problem(r, err)
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
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
func (s *server) problem(r *http.Request, err error) *Problem {
	e := asBrokerError(err)
	pk, ok := problemKinds[e.Kind]
	if !ok {
		pk = problemKinds[broker.KindInternal]
	}
	p := &Problem{
		Type:   ProblemTypeBase + string(e.Kind),
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
		p.Type = ProblemTypeBase + string(broker.KindInternal)
	}
	if p.Detail == "" {
		p.Detail = pk.title
	}
	if e.Hint != "" {
		p.Detail += "; " + e.Hint
	}
	if c, ok := callerFrom(r.Context()); ok && c.Local {
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
	s.logProblem(r, p, e, err)
	if e.Kind == broker.KindInternal || !ok {
		p.Detail = "internal error"
		p.Field, p.StderrTail, p.RPCCode = "", "", 0
	}
	return p
}

func (s *server) logProblem(r *http.Request, p *Problem, e *broker.Error, err error) {
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
