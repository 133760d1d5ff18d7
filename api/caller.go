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
	"unicode"
	"unicode/utf8"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/wire"
)

type callerKey struct{}

// callerFrom returns the authenticated caller of a request.
func callerFrom(ctx context.Context) (broker.Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(broker.Caller)
	return c, ok
}

// authenticate admits a request or answers 401/403:
//
//   - unix-socket callers (peer credentials from ConnContext) whose uid is the
//     daemon's, in the daemon's user namespace, get full rights and Local
//     (their Mcpx-Pid is trusted); one in another user namespace (a
//     confined child) gets none. No browser can open a unix socket, so the
//     browser guard does not apply.
//
//   - every network listener (loopback TCP, and a listener served with
//     ServeOptions.Identify: the tailnet node) first refuses what a web page
//     could send (browserGuard); then GET /healthz answers without identity,
//     and every other route needs one:
//
//   - a signed token (package auth) admits its bearer with exactly the
//     token's rights, on either kind of listener (jwtCaller);
//
//   - on loopback TCP, one of the owner's named tokens (ownerCaller), or
//     the daemon's own bearer token (see checkToken):
//     anyone on this machine can reach a loopback port, but only the
//     daemon's user can read the token file. With it they get full rights
//     but not Local (a TCP peer's pid cannot be checked);
//
//   - on an Identify listener, with no token, Identify names the caller
//     from the connection (tailnet WhoIs).
//
// Everything else is refused: X-Forwarded-For and friends are never read.
func (s *server) authenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.identify(r)
		if err != nil {
			s.metrics.AuthDenied(denialReason(err))
			s.challenge(w, r, err)
			if isMCP(r.URL.Path) {
				s.writeRPCDenial(w, r, err)
				return
			}
			s.writeProblem(w, r, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// writeRPCDenial answers a refused request to the MCP endpoint: the
// problem's status, and for body a JSON-RPC error (id null, as for a
// request that could not be read) whose message is the problem's detail
// (with its hint): what an MCP client reads and shows.
func (s *server) writeRPCDenial(w http.ResponseWriter, r *http.Request, err error) {
	p := s.problem(r, err)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	w.Write(jsonrpc.AppendError(nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: p.Detail})) //nolint:errcheck // the client is gone if this fails
}

type identifyKey struct{}

// listenerOpts is what Serve tells the handler about a network listener.
type listenerOpts struct {
	identify Identify          // nil: loopback TCP
	host     func(string) bool // ServeOptions.Host; nil: any host (Identify listeners only)
}

func (s *server) identify(r *http.Request) (broker.Caller, error) {
	if p, ok := peerFrom(r.Context()); ok {
		return s.unixCaller(p)
	}
	lo, remote, err := networkListener(r)
	if err != nil {
		return broker.Caller{}, err
	}
	if !remote && r.Method == http.MethodGet && r.URL.Path == authRedirectPath && r.Header.Get("Origin") == "" {
		// A browser's navigation back from signing in (signin.go): its
		// state is the capability; it acts as nobody. A page's request
		// (Origin) meets the browser guard.
		return broker.Caller{Name: "browser", Via: wire.ViaTCPLoopback, Rights: rights.None()}, nil
	}
	if isMCP(r.URL.Path) {
		// MCP clients: no cookie, no Mcpx-Client (api/mcp.go).
		if err := mcpGuard(r); err != nil {
			return broker.Caller{}, err
		}
		return s.credentialCaller(r, lo, remote, r.Header.Get(wire.HeaderAuthorization))
	}
	if ck, err := r.Cookie(cookieName(r)); err == nil && r.Header.Get(wire.HeaderAuthorization) == "" {
		return s.sessionCaller(r, lo, remote, ck.Value) // a signed-in browser (browser.go)
	}
	if err := browserGuard(r); err != nil {
		return broker.Caller{}, err
	}
	if r.URL.Path == healthzPath {
		return broker.Caller{Name: "anonymous", Via: via(remote), Rights: rights.None()}, nil
	}
	return s.credentialCaller(r, lo, remote, r.Header.Get(wire.HeaderAuthorization))
}

// credentialCaller names the caller of a network request from its
// Authorization value authz: a signed token, on loopback TCP one of the
// owner's named tokens (package auth/owner) or the daemon's own token, or, with none on an Identify listener, whoever the listener
// names.
func (s *server) credentialCaller(r *http.Request, lo listenerOpts, remote bool, authz string) (broker.Caller, error) {
	tok, ok := bearer(authz)
	switch {
	case authz != "" && !ok:
		return broker.Caller{}, deny(denyMalformed, unauthorized("the Authorization header is not `Bearer <token>`",
			"send `Authorization: Bearer <token>` with a token from `mcpx token mint` (or, on loopback TCP, the daemon's own token)"))
	case ok && looksSigned(tok):
		return s.jwtCaller(tok)
	case ok && isOwnerToken(tok) && !remote:
		return s.ownerCaller(tok)
	case ok && isOwnerToken(tok):
		return broker.Caller{}, deny(denyOwnerTokenRemote, unauthorized("an owner token is for loopback TCP only",
			"over the tailnet your tailnet identity is enough: send no Authorization header, or a token from `mcpx token mint`"))
	case !remote:
		if err := s.checkToken(authz); err != nil {
			return broker.Caller{}, err
		}
		return broker.Caller{Name: "loopback", Via: wire.ViaTCPLoopback, Owner: true, Rights: rights.All()}, nil
	case ok:
		return broker.Caller{}, deny(denyDaemonTokenRemote, unauthorized("this token is not a signed token of this broker",
			"the daemon's own token is for loopback TCP only; here send a token from `mcpx token mint`"))
	}
	c, err := lo.identify(r)
	s.seen(c)
	if be := (*broker.Error)(nil); err != nil && !errors.As(err, &be) {
		// Deny by default: whatever failed, the caller is not admitted.
		err = &broker.Error{Kind: broker.KindForbidden, Op: "authenticate", Msg: "cannot identify the caller", Err: err}
	}
	return c, deny(denyIdentity, err)
}

// healthzPath answers without identity on every listener: a health check
// carries no token, and the answer names nothing but the version.
var healthzPath = func() string {
	rt, _ := wire.Lookup(wire.OpHealthz)
	return rt.Pattern
}()

// authRedirectPath is where a browser comes back from signing in, on
// loopback TCP only: no identity, no Mcpx-Client (signin.go).
var authRedirectPath = func() string {
	rt, _ := wire.Lookup(wire.OpAuthRedirect)
	return rt.Pattern
}()

// scrapePaths are the paths a Prometheus server GETs: /metrics and the
// fleet's service discovery.
var scrapePaths = func() map[string]bool {
	m, _ := wire.Lookup(wire.OpMetrics)
	sd, _ := wire.Lookup(wire.OpFleetSD)
	return map[string]bool{m.Pattern: true, sd.Pattern: true}
}()

func via(remote bool) string {
	if remote {
		return wire.ViaTailnet
	}
	return wire.ViaTCPLoopback
}

// browserGuard refuses, on a network listener, what a web page could send
// (networkListener has already refused a Host the listener does not answer
// to: DNS rebinding, where a page whose name was made to resolve to this
// address sends its own name as Host): a request with an Origin header
// (any cross-site request a browser makes with a body or a non-GET method
// carries one) and, on every route but /healthz, a request without the
// Mcpx-Client header, which is not CORS-safelisted: a cross-site page
// cannot set it without a preflight, and no preflight is ever answered (no
// Access-Control-* header is ever sent). The dashboard's own requests are
// admitted before this, by its session cookie and CSRF secret (browser.go).
// A Prometheus server's GETs (scrapePaths) need no Mcpx-Client either: it
// cannot send one, and what a page could make it do there changes
// nothing and answers what the page cannot read.
func browserGuard(r *http.Request) error {
	switch {
	case r.Header.Get("Origin") != "":
		return deny(denyOrigin, forbidden("requests from web pages are refused (the request has an Origin header)"))
	case r.URL.Path != healthzPath && !(r.Method == http.MethodGet && scrapePaths[r.URL.Path]) && r.Header.Get(wire.HeaderClient) == "":
		return deny(denyNoClientHeader, &broker.Error{Kind: broker.KindForbidden, Op: "authenticate", Field: wire.HeaderClient,
			Msg:  "requests without the " + wire.HeaderClient + " header are refused on network listeners (browser guard)",
			Hint: "send `" + wire.HeaderClient + ": <your client's name>`; mcpx's own clients do"})
	}
	return nil
}

func (s *server) unixCaller(p peer) (broker.Caller, error) {
	if p.err != nil {
		return broker.Caller{}, deny(denyPeer, &broker.Error{Kind: broker.KindForbidden, Op: "authenticate",
			Msg: "cannot read the peer credentials of this connection", Err: p.err})
	}
	if p.uid != s.owner {
		return broker.Caller{}, deny(denyUID, forbidden(fmt.Sprintf("uid %d may not use this daemon; it serves uid %d only", p.uid, s.owner)))
	}
	// The same uid is not the owner when the process lives in another
	// user namespace than the daemon's: that is a confined child (package
	// pool/proc/sandbox puts each in one), whose uid the kernel maps back
	// to ours. Answered as the owner, it could ask the broker for what its
	// sandbox refuses it (another worktree's files, a network, every
	// server). The sandbox also refuses it AF_UNIX sockets by default;
	// this is the second lock, for "unixSockets": true and for kernels
	// where that filter is not enforced. A user's own process in a user
	// namespace (a rootless container, a flatpak) is refused the same way:
	// it can reach the daemon over loopback TCP with the daemon's token.
	switch {
	case p.nsErr != nil:
		return broker.Caller{}, deny(denyPeer, &broker.Error{Kind: broker.KindForbidden, Op: "authenticate",
			Msg: "cannot read the user namespace of the connecting process", Err: p.nsErr})
	case p.nested:
		return broker.Caller{}, deny(denyUserNS, &broker.Error{Kind: broker.KindForbidden, Op: "authenticate",
			Msg:  fmt.Sprintf("a confined child may not drive the broker: the connecting process (pid %d) lives in another user namespace than the daemon's", p.pid),
			Hint: "run mcpx in the daemon's own user namespace, or reach it over loopback TCP with the daemon's token"})
	}
	return broker.Caller{Name: "local:" + strconv.Itoa(p.uid), Via: wire.ViaUnix, Uid: p.uid, Local: true, Owner: true, Rights: rights.All()}, nil
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
		Client:        clipText(h.Get("User-Agent"), 80),
		ScopeFrom:     config.CallerKind(h.Get(wire.HeaderScopeFrom)),
	}
	if k := cc.ScopeFrom; k != "" && !config.IsCallerKind(k) {
		return cc, &broker.Error{Kind: broker.KindBadRequest, Op: "read headers", Field: wire.HeaderScopeFrom,
			Msg:  fmt.Sprintf("%s %q is not a caller kind", wire.HeaderScopeFrom, clipText(string(k), 40)),
			Hint: "send flag, env, script or api, or omit the header (api)"}
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

// clipText is s cut to at most n bytes, on a rune boundary, with the
// control characters dropped: a header recorded and shown as it came.
func clipText(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}
