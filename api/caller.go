package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/broker/config"
)

type callerKey struct{}

// callerFrom returns the authenticated caller of a request.
func callerFrom(ctx context.Context) (broker.Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(broker.Caller)
	return c, ok
}

// authenticate admits a request or answers 403:
//
//   - unix-socket callers (peer credentials from ConnContext) whose uid is the
//     daemon's get full rights and Local (their Mcpx-Pid is trusted);
//
//   - loopback TCP callers must send the daemon's bearer token (see
//     checkToken): anyone on this machine can reach a loopback port, but
//     only the daemon's user can read the token file. With it they get full
//     rights but not Local (a TCP peer's pid cannot be checked). Browsers
//     are refused first: a request with an Origin header, or a Host that is
//     not a loopback name (DNS rebinding), is not from a local program.
//
//   - a listener served with ServeOptions.Identify (the tailnet node) names
//     its own callers with it, and nothing else: the rules above do not
//     apply there, and a request with an Origin header is refused first.
//
// Everything else is refused: X-Forwarded-For and friends are never read.
func (s *server) authenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.identify(r)
		if err != nil {
			challenge(w, err)
			s.writeProblem(w, r, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

type identifyKey struct{}

func (s *server) identify(r *http.Request) (broker.Caller, error) {
	if id, ok := r.Context().Value(identifyKey{}).(Identify); ok {
		if r.Header.Get("Origin") != "" {
			return broker.Caller{}, forbidden("requests from web pages are refused (the request has an Origin header)")
		}
		c, err := id(r)
		if be := (*broker.Error)(nil); err != nil && !errors.As(err, &be) {
			// Deny by default: whatever failed, the caller is not admitted.
			err = &broker.Error{Kind: broker.KindForbidden, Op: "authenticate", Msg: "cannot identify the caller", Err: err}
		}
		return c, err
	}
	if p, ok := peerFrom(r.Context()); ok {
		return s.unixCaller(p)
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return broker.Caller{}, forbidden("only local callers are served: connect over the unix socket or a loopback address")
	}
	if r.Header.Get("Origin") != "" {
		return broker.Caller{}, forbidden("requests from web pages are refused (the request has an Origin header)")
	}
	if !loopbackHost(r.Host) {
		return broker.Caller{}, forbidden(fmt.Sprintf("host %q is not a loopback name", r.Host))
	}
	if err := s.checkToken(r); err != nil {
		return broker.Caller{}, err
	}
	return broker.Caller{Name: "loopback", Via: wire.ViaTCPLoopback, Owner: true, Admin: true}, nil
}

func (s *server) unixCaller(p peer) (broker.Caller, error) {
	if p.err != nil {
		return broker.Caller{}, &broker.Error{Kind: broker.KindForbidden, Op: "authenticate",
			Msg: "cannot read the peer credentials of this connection", Err: p.err}
	}
	if p.uid != s.owner {
		return broker.Caller{}, forbidden(fmt.Sprintf("uid %d may not use this daemon; it serves uid %d only", p.uid, s.owner))
	}
	return broker.Caller{Name: "local:" + strconv.Itoa(p.uid), Via: wire.ViaUnix, Uid: p.uid, Local: true, Owner: true, Admin: true}, nil
}

func forbidden(msg string) error {
	return &broker.Error{Kind: broker.KindForbidden, Op: "authenticate", Msg: msg}
}

// loopbackHost reports whether a Host header names this machine: a loopback
// IP or "localhost", with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// callContext reads the caller-context headers. Mcpx-Pid is honoured only
// from local (unix-socket) callers, and only when it names the connecting
// process or an ancestor (peer.vouchesFor): a remote pid names nothing we
// can watch, and TCP callers' is ignored.
func callContext(r *http.Request, c broker.Caller) (broker.CallContext, error) {
	h := r.Header
	cc := broker.CallContext{
		Cwd:           h.Get(wire.HeaderCwd),
		Session:       h.Get(wire.HeaderSession),
		ParentSession: h.Get(wire.HeaderParentSession),
		Lease:         h.Get(wire.HeaderLease),
		Scope:         config.ScopeKind(h.Get(wire.HeaderScope)),
	}
	if v := h.Get(wire.HeaderPid); v != "" && c.Local {
		pid, err := strconv.Atoi(v)
		if err != nil || pid <= 0 {
			return cc, &broker.Error{Kind: broker.KindBadRequest, Op: "read headers", Field: wire.HeaderPid,
				Msg: fmt.Sprintf("%s %q is not a process id", wire.HeaderPid, v), Hint: "send a positive integer or omit the header"}
		}
		if p, ok := peerFrom(r.Context()); ok && !p.vouchesFor(pid) {
			return cc, &broker.Error{Kind: broker.KindBadRequest, Op: "read headers", Field: wire.HeaderPid,
				Msg:  fmt.Sprintf("%s %d is neither the connecting process nor one of its ancestors", wire.HeaderPid, pid),
				Hint: "send your own pid or your parent's (the mcpx CLI sends its parent shell's), or omit the header"}
		}
		cc.Pid = pid
	}
	return cc, nil
}

// request builds the broker request for r: the caller, its declared
// context, and the {server} path parameter if the route has one.
func request(r *http.Request) (broker.Request, error) {
	c, _ := callerFrom(r.Context())
	cc, err := callContext(r, c)
	if err != nil {
		return broker.Request{}, err
	}
	return broker.Request{Caller: c, Context: cc, Server: param(r, "server")}, nil
}
