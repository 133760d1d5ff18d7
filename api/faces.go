package api

import (
	"errors"
	"net/http"
	"strings"

	"mcpx.dev/mcpx/auth/owner"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// Faces that never trip a client into OAuth (issue 34). mcpx's listeners
// are not OAuth resource servers: the tailnet names its callers by WhoIs,
// loopback TCP takes the owner's tokens. An MCP client that meets a 401
// (or, for some, any refusal) starts OAuth discovery: it asks for the
// protected resource metadata (RFC 9728) and authorization server metadata
// (RFC 8414, OpenID Connect discovery) at the well-known paths, then tries
// dynamic client registration at /register. A 200 or an empty {} at any
// of those, or a Bearer challenge, sends it into a flow mcpx cannot finish,
// after which Claude Code caches "needs auth" for the server and stops
// sending its configured header (anthropics/claude-code#44774, #56357,
// #80785). So on every listener:
//
//   - every path under /.well-known/ (mcpx serves none), and /register,
//     /authorize and /token (where clients look when there is no
//     metadata), is a plain 404 problem, before any authentication;
//   - no 401 carries a Bearer challenge: the tailnet's carry none, and
//     loopback TCP's carry the scheme "Mcpx", which RFC 9110 asks for and
//     no OAuth client acts on (challenge);
//   - the body of every refusal says how to fix it; on /mcp it is a
//     JSON-RPC error, which MCP clients show.

// oauthPaths are the exact paths notOAuth answers 404 beside /.well-known/.
var oauthPaths = map[string]bool{"/register": true, "/authorize": true, "/token": true}

// isOAuthPath reports whether path is one an OAuth client probes.
func isOAuthPath(path string) bool {
	return oauthPaths[path] || strings.Contains(path, "/.well-known/")
}

// notOAuth answers the paths of OAuth discovery and registration with a
// 404 problem on every listener, before authentication: no caller, with or
// without credentials, is told anything else there.
func notOAuth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isOAuthPath(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", wire.MediaProblem)
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNotFound)
		w.Write(notOAuthBody) //nolint:errcheck // the client is gone if this fails
	})
}

var notOAuthBody = []byte(`{"type":"` + wire.ProblemTypeBase + string(broker.KindNotFound) + `","title":"Not Found","status":404,` +
	`"detail":"mcpx does not use OAuth here: no authorization server, no client registration. Over the tailnet your tailnet identity is enough (no token); on loopback TCP send the Authorization header ` +
	"`mcpx install <client> --http`" + ` writes."}` + "\n")

// ownerCaller admits the bearer of one of the owner's named tokens on
// loopback TCP: the owner, as the daemon's own token does, named
// "loopback:<name>". A token that is revoked or unknown is a 401 that says
// how to get one; it names no token.
func (s *server) ownerCaller(secret string) (broker.Caller, error) {
	if s.ownerTokens == nil {
		return broker.Caller{}, deny(denyOwnerToken, unauthorized("this daemon accepts no owner tokens", "use its unix socket"))
	}
	info, err := s.ownerTokens.Check(secret)
	switch {
	case errors.Is(err, owner.ErrUnknown), errors.Is(err, owner.ErrMalformed):
		return broker.Caller{}, deny(denyOwnerToken, unauthorized(err.Error(),
			"the daemon's user runs `mcpx install <client> --http` again (it writes a new token into the client's config), or `mcpx token add NAME` and puts the token it prints in the client's Authorization header; `mcpx token ls` lists the tokens there are"))
	case err != nil:
		return broker.Caller{}, deny(denyOwnerToken, &broker.Error{Kind: kindUnauthorized, Op: "authenticate", Err: err,
			Msg: "the owner tokens cannot be read", Hint: "the daemon's user runs `mcpx token ls` to see why"})
	}
	return broker.Caller{Name: "loopback:" + info.Name, Via: wire.ViaTCPLoopback, Owner: true, Rights: rights.All()}, nil
}

// isOwnerToken tells an owner token from the daemon's and a signed one.
func isOwnerToken(tok string) bool { return strings.HasPrefix(tok, owner.Prefix) }
