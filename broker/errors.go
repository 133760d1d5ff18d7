package broker

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"mcpx.dev/mcpx/config"
)

// Kind classifies a broker error. The api package maps each kind to one HTTP
// status and one stable problem type; never switch on error strings.
type Kind string

const (
	KindBadRequest  Kind = "bad-request"  // caller input is wrong (cwd, body, arguments): 400
	KindNotFound    Kind = "not-found"    // unknown server, tool, instance, resource, prompt: 404
	KindForbidden   Kind = "forbidden"    // caller may not do this: 403
	KindChildFailed Kind = "child-failed" // the child crashed, would not start or spoke garbage: 502
	KindTimeout     Kind = "timeout"      // the call or the child's start ran out of time: 504
	KindExhausted   Kind = "exhausted"    // pool caps reached, nothing idle to evict: 503
	KindUnavailable Kind = "unavailable"  // broker shutting down, server in crash-loop backoff: 503
	KindCanceled    Kind = "canceled"     // the caller went away before the answer: 499 (nobody reads it)
	KindConfig      Kind = "config"       // configuration is invalid
	KindInternal    Kind = "internal"     // a bug; details are logged, never sent to remote callers
	KindStaleClient Kind = "stale-client" // a generated client's idea of a tool's schemas is out of date: 409
	KindRateLimited Kind = "rate-limited" // a rate limit or maxConcurrent refused the call (Error.Limit): 429
)

// Error is the broker's typed error. Msg is safe to show to the caller; Err
// may carry internal detail (paths, stack text) and is only logged.
type Error struct {
	Kind       Kind
	Op         string        // what the broker was doing: "call", "list tools", "load config"
	Server     string        // the server involved, if any
	Field      string        // the config field or request part involved, if any
	Msg        string        // caller-safe description
	Private    string        // fuller description for the daemon's own user (may name commands, paths, URLs); "" = Msg
	Hint       string        // how to fix it, if known
	StderrTail string        // last lines the child wrote to stderr (crashes)
	RetryAfter time.Duration // for KindExhausted/KindUnavailable/KindRateLimited: when to try again
	Limit      *Limit        // for KindRateLimited: the limit that refused the call (ratelimit.go)
	RPCCode    int           // JSON-RPC error code from the child, if any
	RPCData    []byte        // the data of that JSON-RPC error, as the child sent it; nil = none
	Err        error         // underlying cause; logged, not shown
}

func (e *Error) Error() string {
	s := cmp.Or(e.Private, e.Msg)
	if s == "" && e.Err != nil {
		s = e.Err.Error()
	}
	if e.Server != "" {
		s = fmt.Sprintf("server %q: %s", e.Server, s)
	}
	if e.Field != "" && !strings.Contains(s, e.Field) {
		s += fmt.Sprintf(" (field %s)", e.Field)
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf reports the kind of err: KindConfig for a *config.Problem (what
// config.Parse and config.Load return), KindInternal if it is neither that
// nor a *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var p *config.Problem
	if errors.As(err, &p) {
		return KindConfig
	}
	return KindInternal
}
