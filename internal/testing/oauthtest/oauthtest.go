// Package oauthtest is an OAuth 2.1 authorization server with an MCP
// resource server behind it, for tests (the hosted server a user signs in
// to, at the edge of the machine):
//
//	p := oauthtest.New(t, mcpHandler) // nil = a stub that answers {} to every request
//	cfg := `{"servers": {"hosted": {"url": "` + p.MCPURL() + `"}}}`
//	// … sign in; p.Issued() is every token, code and secret it handed out
//
// A browser names the person signing in with the UserHeader header at the
// authorization endpoint (its login page, in effect); the tokens of that
// sign-in, refreshed or not, are that person's, and Requests says whose
// token each MCP request carried.
package oauthtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Provider is the authorization server (AS) and the resource server (RS).
// It registers clients (RFC 7591), authorizes with PKCE S256 and the
// resource (RFC 8707), answers with iss (RFC 9207), rotates refresh
// tokens, revokes (RFC 7009), and serves the resource metadata (RFC 9728)
// and a 401 challenge in front of the MCP handler.
type Provider struct {
	AS, RS *httptest.Server
	mcp    http.Handler

	mu         sync.Mutex
	codes      map[string]codeGrant // guarded by mu
	access     map[string]string    // guarded by mu; valid access tokens, and whose
	refresh    map[string]string    // guarded by mu; valid refresh tokens, and whose
	requests   []Request            // guarded by mu; the MCP requests with a valid token
	issued     []string             // guarded by mu
	registered int                  // guarded by mu
	revoked    []string             // guarded by mu; the token_type_hint of each revocation
	mcpHits    int                  // guarded by mu; requests to the MCP endpoint

	// Set before use, or under Lock.
	ExpiresIn int    // the access tokens' lifetime in seconds; 0 = 3600
	PRMPath   string // where the RS serves its resource metadata; "" = none (the 2025-03-26 fallback)
	Resource  string // the resource the metadata names; "" = MCPURL()
}

type codeGrant struct{ challenge, resource, clientID, redirect, user string }

// UserHeader, on the browser's request to the authorization endpoint,
// names the person signing in ("" = nobody in particular).
const UserHeader = "X-Oauthtest-User"

// Request is one MCP request that came with a valid token.
type Request struct {
	User string // whose token it carried (UserHeader at its sign-in)
	Body string // the request's body
}

// Requests returns the MCP requests that came with a valid token.
func (p *Provider) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// New starts a provider in front of mcp (nil = a stub answering {} to
// every request); t's cleanup closes it.
func New(t testing.TB, mcp http.Handler) *Provider {
	p := &Provider{mcp: mcp, codes: map[string]codeGrant{}, access: map[string]string{}, refresh: map[string]string{},
		PRMPath: "/.well-known/oauth-protected-resource/mcp"}
	p.AS = httptest.NewServer(http.HandlerFunc(p.serveAS))
	p.RS = httptest.NewServer(http.HandlerFunc(p.serveRS))
	t.Cleanup(p.AS.Close)
	t.Cleanup(p.RS.Close)
	return p
}

// MCPURL is the MCP endpoint: RS/mcp.
func (p *Provider) MCPURL() string { return p.RS.URL + "/mcp" }

// Lock and Unlock guard the settable fields once the provider serves.
func (p *Provider) Lock()   { p.mu.Lock() }
func (p *Provider) Unlock() { p.mu.Unlock() }

// Issued returns every token, code and client secret handed out so far,
// and every PKCE verifier a client sent.
func (p *Provider) Issued() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.issued)
}

// Registered is how many clients registered.
func (p *Provider) Registered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.registered
}

// Revoked returns the token_type_hint of each revocation.
func (p *Provider) Revoked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.revoked)
}

// MCPRequests is how many requests reached the MCP endpoint, signed or not.
func (p *Provider) MCPRequests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mcpHits
}

// LiveRefreshTokens is how many refresh tokens are good.
func (p *Provider) LiveRefreshTokens() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.refresh)
}

// RevokeAll invalidates every token, as an administrator at the
// authorization server would.
func (p *Provider) RevokeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.access)
	clear(p.refresh)
}

func (p *Provider) token(prefix string) string {
	s := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), len(p.issued))
	p.issued = append(p.issued, s)
	return s
}

func (p *Provider) serveRS(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.PRMPath != "" && r.URL.Path == p.PRMPath {
		res := p.Resource
		if res == "" {
			res = p.MCPURL()
		}
		p.mu.Unlock()
		writeJSON(w, map[string]any{"resource": res, "authorization_servers": []string{p.AS.URL}, "scopes_supported": []string{"mcp:read"}})
		return
	}
	if r.URL.Path != "/mcp" {
		p.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	p.mcpHits++
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	user, valid := p.access[tok]
	valid = valid && ok
	prm := p.PRMPath
	p.mu.Unlock()
	if valid && r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		p.mu.Lock()
		p.requests = append(p.requests, Request{User: user, Body: string(body)})
		p.mu.Unlock()
	}
	if !valid {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s%s", scope="mcp:read"`, p.RS.URL, prm))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if p.mcp != nil {
		p.mcp.ServeHTTP(w, r)
		return
	}
	writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}})
}

func (p *Provider) serveAS(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeJSON(w, map[string]any{"issuer": p.AS.URL, "authorization_endpoint": p.AS.URL + "/authorize",
			"token_endpoint": p.AS.URL + "/token", "registration_endpoint": p.AS.URL + "/register",
			"revocation_endpoint": p.AS.URL + "/revoke", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "scopes_supported": []string{"mcp:read", "offline_access"},
			"token_endpoint_auth_methods_supported":          []string{"client_secret_post"},
			"authorization_response_iss_parameter_supported": true})
	case "/register":
		var m struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		json.NewDecoder(r.Body).Decode(&m) //nolint:errcheck // an empty registration gets no redirect URI
		p.registered++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, map[string]any{"client_id": "client-1", "client_secret": p.token("secret"),
			"redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "client_secret_post"})
	case "/authorize":
		p.authorize(w, r)
	case "/token":
		p.serveToken(w, r)
	case "/revoke":
		r.ParseForm() //nolint:errcheck // an unparsable form revokes nothing
		p.revoked = append(p.revoked, r.Form.Get("token_type_hint"))
		delete(p.access, r.Form.Get("token"))
		delete(p.refresh, r.Form.Get("token"))
	default:
		http.NotFound(w, r)
	}
}

// authorize consents at once: the redirect back carries a code, the state
// and the issuer.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != p.MCPURL() || q.Get("state") == "" ||
		!strings.Contains(q.Get("scope"), "mcp:read") || !strings.Contains(q.Get("scope"), "offline_access") {
		http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
		return
	}
	code := p.token("code")
	p.codes[code] = codeGrant{q.Get("code_challenge"), q.Get("resource"), q.Get("client_id"), q.Get("redirect_uri"), r.Header.Get(UserHeader)}
	back := q.Get("redirect_uri") + "?" + url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {p.AS.URL}}.Encode()
	http.Redirect(w, r, back, http.StatusFound)
}

func (p *Provider) serveToken(w http.ResponseWriter, r *http.Request) {
	r.ParseForm() //nolint:errcheck // checked field by field below
	f := r.Form
	if f.Get("resource") != p.MCPURL() || f.Get("client_id") != "client-1" || f.Get("client_secret") == "" {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	var user string
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := p.codes[f.Get("code")]
		user = g.user
		delete(p.codes, f.Get("code"))
		if v := f.Get("code_verifier"); v != "" {
			p.issued = append(p.issued, v) // a secret the client made: Issued lists it too
		}
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || f.Get("redirect_uri") != g.redirect {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
	case "refresh_token":
		u, ok := p.refresh[f.Get("refresh_token")]
		if !ok {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		user = u
		delete(p.refresh, f.Get("refresh_token")) // rotation: a refresh token is good once
	default:
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	at, rt := p.token("access"), p.token("refresh")
	p.access[at], p.refresh[rt] = user, user
	exp := p.ExpiresIn
	if exp == 0 {
		exp = 3600
	}
	writeJSON(w, map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt,
		"expires_in": exp, "scope": "mcp:read offline_access"})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client is gone if this fails
}
