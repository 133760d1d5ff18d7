package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/mcp/oauth"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/pool"
)

// translate maps pool and protocol errors to *Error kinds.
func (b *Broker) translate(err error, op, server string) error {
	if err == nil {
		return nil
	}
	var be *Error
	if errors.As(err, &be) {
		return err
	}
	var req *oauth.RequiredError
	if errors.As(err, &req) {
		return authRequired(op, server, req)
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		e := &Error{Op: op, Server: server, Msg: rpc.Message, RPCCode: rpc.Code, RPCData: rpc.Data, Err: err, Kind: KindChildFailed}
		switch rpc.Code {
		case jsonrpc.CodeInvalidParams: // the child rejected the arguments
			e.Kind = KindBadRequest
		case jsonrpc.CodeMethodNotFound: // the child does not offer this
			e.Kind = KindNotFound
		}
		return e
	}
	if e := childTransportError(err, op, server); e != nil {
		var hs *client.HTTPStatusError
		if errors.As(err, &hs) && hs.StatusCode == 403 && b.oauth.Known(server) {
			// A server mcpx signs in to: no header to fix (oauth.go).
			e.Hint = fmt.Sprintf("the account signed in with `mcpx auth login %s` may not do this, even with the scopes the server asked for", server)
		}
		return e
	}
	var pe *pool.Error
	if !errors.As(err, &pe) {
		if errors.Is(err, context.DeadlineExceeded) {
			return &Error{Kind: KindTimeout, Op: op, Server: server, Msg: "timed out", Err: err}
		}
		if errors.Is(err, context.Canceled) {
			return &Error{Kind: KindCanceled, Op: op, Server: server, Msg: "the caller went away", Err: err}
		}
		if errors.Is(err, client.ErrClosed) {
			return &Error{Kind: KindChildFailed, Op: op, Server: server, Err: err,
				Msg: "the server ended our session during the call (a url server that keeps forgetting sessions, or a child that closed its stdout)"}
		}
		// What is left came from the child's transport (an HTTP status, a
		// refused connection, a malformed answer): the child failed, and
		// the detail, which may name internal addresses, goes to the log.
		return &Error{Kind: KindChildFailed, Op: op, Server: server, Err: err,
			Msg: "the server's transport failed during the call; the daemon log has the detail"}
	}
	// pe.Detail may name commands, paths and URLs of the daemon's machine:
	// it is Private. Msg is what any caller may read.
	e := &Error{Op: op, Server: cmp.Or(server, pe.Server), Msg: pe.Detail, StderrTail: pe.StderrTail, RetryAfter: pe.RetryAfter, Err: err}
	private := func(msg string) {
		e.Private = msg
		if pe.Detail != "" {
			e.Private = msg + ": " + pe.Detail
		}
		e.Msg = msg
	}
	switch {
	case errors.Is(err, pool.ErrUnknownServer), errors.Is(err, pool.ErrNotFound):
		e.Kind = KindNotFound
		e.Msg = cmp.Or(pe.Detail, "not found")
	case errors.Is(err, pool.ErrExhausted):
		e.Kind = KindExhausted
	case errors.Is(err, pool.ErrBackoff):
		e.Kind = KindUnavailable
		private("the server keeps failing to start; waiting before trying again. Last error")
		e.Hint = "check `mcpx status` and the daemon log for the child's stderr"
	case errors.Is(err, pool.ErrClosed):
		e.Kind = KindUnavailable
		e.RetryAfter = time.Second
	case errors.Is(err, pool.ErrTimeout):
		e.Kind = KindTimeout
	case errors.Is(err, pool.ErrStartTimeout):
		e.Kind = KindTimeout
		private("the server did not finish starting in time")
	case errors.Is(err, nixresolve.ErrTimeout):
		// Resolving its nix: command (lock, evaluate, build) ran out of
		// nix.timeout: a timeout, not a failed child.
		e.Kind = KindTimeout
		private("resolving the server's nix: command timed out")
		e.Hint = "raise nix.timeout in the config for a cold build, or check the flake; `mcpx status` and the daemon log have nix's output"
	case errors.Is(err, pool.ErrCanceled):
		e.Kind = KindCanceled
	case errors.Is(err, pool.ErrSpawnConfig):
		e.Kind = KindBadRequest
		e.Field = "scope"
		private("the server's command line needs a root or cwd this call does not have")
	case errors.Is(err, pool.ErrCrashed):
		e.Kind = KindChildFailed
		private("the server exited")
	default: // ErrStart
		e.Kind = KindChildFailed
		private("the server failed to start")
	}
	return e
}

// childTransportError explains an oversized answer or a url server's HTTP
// error status; nil for other errors.
func childTransportError(err error, op, server string) *Error {
	var tl *client.TooLargeError
	if errors.As(err, &tl) {
		e := &Error{Kind: KindChildFailed, Op: op, Server: server, Err: err,
			Msg:  fmt.Sprintf("the server's answer is larger than the limit of %d bytes (limits.maxMessageBytes); it was dropped", tl.Limit),
			Hint: "raise limits.maxMessageBytes in the config if such answers are expected"}
		if tl.Unended || errors.Is(err, client.ErrClosed) {
			e.Msg += ", and the session could not go on: the server is restarted on the next call"
		}
		return e
	}
	var hs *client.HTTPStatusError
	if !errors.As(err, &hs) {
		return nil
	}
	e := &Error{Kind: KindChildFailed, Op: op, Server: server, Err: err,
		Msg:     fmt.Sprintf("the url server answered HTTP %s", hs.Status),
		Private: fmt.Sprintf("the url server answered %s %s with HTTP %s", hs.Method, hs.URL, hs.Status)}
	if hs.Body != "" {
		e.Private += fmt.Sprintf(": %q", hs.Body)
	}
	switch {
	case hs.StatusCode == 401:
		e.Hint = `the server needs credentials: set them in the server's "headers" in the config (e.g. "Authorization": "Bearer …")`
	case hs.StatusCode == 403:
		e.Hint = `the credentials in the server's "headers" in the config are not allowed to do this`
	case hs.StatusCode == 404:
		e.Hint = "check the server's url in the config"
	case hs.StatusCode >= 500:
		e.Hint = "the url server failed; see its own logs"
	}
	return e
}

// keyAlive reports whether the owner of a caller-owned key still exists.
// pid: keys are checked with kill(pid, 0); other keys live until idle.
func keyAlive(key string) bool {
	rest, ok := strings.CutPrefix(key, "pid:")
	if !ok {
		return true
	}
	pid, err := strconv.Atoi(rest)
	if err != nil || pid <= 0 {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
