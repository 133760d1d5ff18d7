package public

import (
	"errors"
	"net/http"
	"strings"

	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// Refusal is why Authenticate refused a request: what Refuse answers. Its
// text names no token and no secret.
type Refusal struct {
	Status int    // 401, 403 or 429
	Code   string // the RFC 6750 error code; "" when no token was sent
	Msg    string
}

func (e *Refusal) Error() string { return e.Msg }

// Authenticate admits a request to /mcp (server "") or /mcp/<server> by
// its bearer token: one of this face's access tokens, live, bound to the
// resource asked for (a token of /mcp serves every server its rights name;
// one of /mcp/<server>, that server only) and granted Scope. Its error is
// a *Refusal.
func (f *Face) Authenticate(r *http.Request, server string) (access.Token, error) {
	authz := r.Header.Get("Authorization")
	if authz == "" {
		return access.Token{}, &Refusal{Status: http.StatusUnauthorized,
			Msg: "this MCP server needs OAuth sign-in: the client reads " + f.metadataURL(server) + " and signs in there"}
	}
	if f.limit.spent(r) {
		return access.Token{}, &Refusal{Status: http.StatusTooManyRequests, Msg: "too many refused tokens from this address; retry after a second"}
	}
	tok, err := f.check(server, authz)
	if err == nil {
		err = f.checkApprover(r.Context(), tok)
	}
	if err != nil {
		f.limit.allow(r) // a refused token costs the address one of its allowance; a good one nothing
	}
	return tok, err
}

func (f *Face) check(server, authz string) (access.Token, error) {
	scheme, secret, ok := strings.Cut(authz, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return access.Token{}, f.invalid("the Authorization header is not `Bearer <token>`")
	}
	if f.ext != nil {
		resources := []string{f.Resource(server)}
		if server != "" {
			resources = append(resources, f.Resource(""))
		}
		tok, rf := f.ext.check(strings.TrimSpace(secret), resources)
		if rf != nil {
			return access.Token{}, rf
		}
		return tok, nil
	}
	tok, err := f.tokens.Check(strings.TrimSpace(secret))
	switch {
	case errors.Is(err, access.ErrExpired):
		return access.Token{}, f.invalid("the access token has expired: refresh it or sign in again")
	case err != nil || tok.Refresh:
		return access.Token{}, f.invalid("the access token is not one this server issued, or it was revoked: sign in again")
	case tok.Resource != f.Resource("") && tok.Resource != f.Resource(server):
		return access.Token{}, f.invalid("the access token was issued for another resource; this one is " + f.Resource(server))
	case !tok.HasScope(Scope):
		return access.Token{}, &Refusal{Status: http.StatusForbidden, Code: "insufficient_scope",
			Msg: "the access token lacks the scope " + Scope + ": sign in again asking for it"}
	}
	return tok, nil
}

func (f *Face) invalid(msg string) *Refusal {
	return &Refusal{Status: http.StatusUnauthorized, Code: "invalid_token", Msg: msg}
}

// Refuse answers a request Authenticate refused: the challenge (RFC 6750
// §3, RFC 9728 §5.1) and, for body, a JSON-RPC error (id null) whose
// message says what to do, which MCP clients show.
func (f *Face) Refuse(w http.ResponseWriter, server string, err error) {
	var rf *Refusal
	if !errors.As(err, &rf) {
		rf = &Refusal{Status: http.StatusUnauthorized, Code: "invalid_token", Msg: "the request could not be authenticated"}
	}
	switch {
	case rf.Status == http.StatusTooManyRequests, rf.Status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	case rf.Status == http.StatusForbidden && rf.Code == "":
		// Valid, but it grants nothing: no challenge, which would send
		// the client signing in again for the same token.
	default:
		w.Header().Set("WWW-Authenticate", f.challenge(server, rf))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(rf.Status)
	w.Write(jsonrpc.AppendError(nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: rf.Msg})) //nolint:errcheck // the client is gone if this fails
}

// challenge is the WWW-Authenticate value for a refusal: the metadata's
// URL and the scope needed, in one challenge.
func (f *Face) challenge(server string, rf *Refusal) string {
	var b strings.Builder
	b.WriteString(`Bearer resource_metadata="` + f.metadataURL(server) + `"`)
	if sc := f.scopes(); len(sc) > 0 {
		b.WriteString(`, scope="` + strings.Join(sc, " ") + `"`)
	}
	if rf.Code != "" {
		b.WriteString(`, error="` + rf.Code + `", error_description="` + strings.ReplaceAll(rf.Msg, `"`, `'`) + `"`)
	}
	return b.String()
}
