package public

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"time"

	"mcpx.dev/mcpx/auth/access"
)

// token is the token endpoint (POST /token): an authorization code with
// its PKCE verifier, or a refresh token, for an access token and a new
// refresh token. Every error is RFC 6749 §5.2's, and names no secret.
func (f *Face) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, oauthError{Error: "invalid_request", Description: "the token endpoint takes POST"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{Error: "invalid_request", Description: "the body is not a form"})
		return
	}
	var at, rt string
	var tok access.Token
	var err error
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		at, rt, tok, err = f.exchangeCode(r)
	case "refresh_token":
		at, rt, tok, err = f.refresh(r)
	default:
		err = &grantError{"unsupported_grant_type", "the grants are authorization_code and refresh_token"}
	}
	if err != nil {
		var ge *grantError
		if !errors.As(err, &ge) {
			f.log.Warn("oauth token endpoint", "err", err)
			ge = &grantError{"server_error", "the token could not be issued"}
		}
		writeJSON(w, http.StatusBadRequest, oauthError{Error: ge.code, Description: ge.desc})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt,
		"expires_in": int(time.Until(tok.Expires).Seconds()), "scope": Scope})
}

type grantError struct{ code, desc string }

func (e *grantError) Error() string { return e.code + ": " + e.desc }

var errBadCode = &grantError{"invalid_grant", "the authorization code is unknown, used, expired, or not this client's, redirect URI's and verifier's"}

// exchangeCode redeems an authorization code: once (it is gone at its
// first use, good or bad), within codeTTL, by its client, with its
// redirect URI and the verifier of its challenge.
func (f *Face) exchangeCode(r *http.Request) (string, string, access.Token, error) {
	form := r.PostForm
	f.authz.mu.Lock()
	is, ok := f.authz.codes[sha(form.Get("code"))]
	delete(f.authz.codes, sha(form.Get("code")))
	f.authz.mu.Unlock()
	p := is.p
	switch {
	case !ok || time.Now().After(is.expires):
		return "", "", access.Token{}, errBadCode
	case form.Get("client_id") != p.client.ID || subtle.ConstantTimeCompare([]byte(form.Get("redirect_uri")), []byte(p.redirect)) != 1:
		return "", "", access.Token{}, errBadCode
	case len(form.Get("code_verifier")) < 43 || len(form.Get("code_verifier")) > 128 || subtle.ConstantTimeCompare([]byte(sha(form.Get("code_verifier"))), []byte(p.challenge)) != 1:
		return "", "", access.Token{}, errBadCode
	case form.Get("resource") != "":
		if res, err := f.resourceOf(form.Get("resource")); err != nil || res != p.resource {
			return "", "", access.Token{}, &grantError{"invalid_target", "the resource is not the one authorized"}
		}
	}
	a := p.approved
	g := access.Grant{Client: p.client.ID, ClientName: p.clientLabel, Resource: p.resource, Scopes: []string{Scope},
		Rights: a.Rights, Approver: a.Approver, ApproverNode: a.Node, TTL: a.TTL}
	at, rt, tok, err := f.tokens.IssuePair(g, accessTTL)
	if err == nil {
		f.log.Info("oauth tokens issued", "client", p.client.ID, "approver", a.Approver, "token", tok.ID)
	}
	return at, rt, tok, err
}

// refresh rotates a refresh token of the client.
func (f *Face) refresh(r *http.Request) (string, string, access.Token, error) {
	if old, err := f.tokens.Check(r.PostForm.Get("refresh_token")); err == nil && old.Refresh && old.Client == r.PostForm.Get("client_id") {
		switch err := f.approverErr(r.Context(), old); {
		case errors.Is(err, ErrApproverGone):
			return "", "", access.Token{}, &grantError{"invalid_grant", ErrApproverGone.Error() + ": sign in again"}
		case err != nil: // kept: the tailnet could not be asked
			return "", "", access.Token{}, &grantError{"server_error", "the approval of this sign-in cannot be checked now: retry later"}
		}
	}
	at, rt, tok, err := f.tokens.Rotate(r.PostForm.Get("refresh_token"), r.PostForm.Get("client_id"))
	switch {
	case errors.Is(err, access.ErrReused):
		f.log.Warn("oauth refresh token reused: its sign-in is revoked", "client", r.PostForm.Get("client_id"))
		return "", "", access.Token{}, &grantError{"invalid_grant", err.Error()}
	case errors.Is(err, access.ErrUnknown), errors.Is(err, access.ErrExpired), errors.Is(err, access.ErrMalformed):
		return "", "", access.Token{}, &grantError{"invalid_grant", "the refresh token is unknown, expired, revoked or not this client's: sign in again"}
	}
	if err == nil && r.PostForm.Get("resource") != "" {
		if res, rerr := f.resourceOf(r.PostForm.Get("resource")); rerr != nil || res != tok.Resource {
			return "", "", access.Token{}, &grantError{"invalid_target", "the resource is not the one authorized"}
		}
	}
	return at, rt, tok, err
}

// revoke is token revocation (RFC 7009): a token of this server, of
// either kind, is revoked with its whole sign-in; the answer is 200
// whatever the token was.
func (f *Face) revoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, oauthError{Error: "invalid_request", Description: "revoke with POST"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{Error: "invalid_request", Description: "the body is not a form"})
		return
	}
	if tok, err := f.tokens.Check(r.PostForm.Get("token")); err == nil && (r.PostForm.Get("client_id") == "" || r.PostForm.Get("client_id") == tok.Client) {
		f.tokens.RevokeFamily(tok) //nolint:errcheck // 200 either way (RFC 7009 §2.2)
		f.log.Info("oauth token revoked by its client", "client", tok.Client, "token", tok.ID)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
