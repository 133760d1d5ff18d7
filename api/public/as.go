package public

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
)

// The embedded authorization server (OAuth 2.1): its metadata (RFC 8414),
// dynamic client registration (RFC 7591), the authorization code grant
// with PKCE S256 only and exact redirect URIs, iss in the response
// (RFC 9207), refresh tokens that rotate (a reused one revokes its
// family), revocation (RFC 7009). No implicit grant, no password grant,
// no client secrets. Who approves is the daemon's owner: the authorization
// page shows a one-time code, the owner runs `mcpx auth approve CODE` on
// the machine (Approve), and the page sends the browser back to the
// client. No password is ever asked for.

// The authorization server's paths on the public face.
const (
	ASMetadataPath = "/.well-known/oauth-authorization-server"
	AuthorizePath  = "/authorize"
	waitPath       = "/authorize/wait"
	TokenPath      = "/token"
	RegisterPath   = "/register"
	RevokePath     = "/revoke"
)

// Lifetimes of the flow's parts.
const (
	codeTTL     = 60 * time.Second // an authorization code: once, within a minute
	pendingTTL  = 10 * time.Minute // an authorization waiting for its approval
	maxPending  = 64               // authorizations waiting at once
	accessTTL   = time.Hour        // an access token; its refresh token lives as long as the approval
	maxFormBody = 16 << 10
)

// pending is an authorization waiting for the owner's approval.
type pending struct {
	id, userCode                                      string
	client                                            access.Client
	redirect, state, challenge, resource, clientLabel string
	expires                                           time.Time
	approved                                          *Approval
	denied                                            bool
}

// Approval is what the owner approved an authorization with.
type Approval struct {
	Approver string        // who approved ("owner", a tailnet login)
	Rights   rights.Rights // the approver's rights narrowed by the consent
	TTL      time.Duration // how long the client may refresh; 0 = a day
	// Node is the tailnet address a tailnet approver consented from
	// (consent.go); "" for the owner's approval by code.
	Node string
}

// issued is an authorization code's grant.
type issued struct {
	p       *pending
	expires time.Time
}

type authz struct {
	mu      sync.Mutex
	pending map[string]*pending // guarded by mu: by id
	codes   map[string]issued   // guarded by mu: by sha256 of the code
}

func newAuthz() *authz {
	return &authz{pending: map[string]*pending{}, codes: map[string]issued{}}
}

// asPaths are the paths the authorization server answers.
var asPaths = map[string]bool{ASMetadataPath: true, AuthorizePath: true, waitPath: true, TokenPath: true, RegisterPath: true, RevokePath: true}

// serveAS answers the authorization server's paths; false = not one.
func (f *Face) serveAS(w http.ResponseWriter, r *http.Request) bool {
	if !asPaths[r.URL.Path] || f.ext != nil {
		return false
	}
	if !f.limit.allow(r) {
		f.tooMany(w)
		return true
	}
	switch r.URL.Path {
	case ASMetadataPath:
		f.asMetadata(w)
	case AuthorizePath:
		f.authorize(w, r)
	case waitPath:
		f.wait(w, r)
	case TokenPath:
		f.token(w, r)
	case RegisterPath:
		f.register(w, r)
	case RevokePath:
		f.revoke(w, r)
	}
	return true
}

func (f *Face) asMetadata(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         f.Issuer(),
		"authorization_endpoint":                         f.origin + AuthorizePath,
		"token_endpoint":                                 f.origin + TokenPath,
		"registration_endpoint":                          f.origin + RegisterPath,
		"revocation_endpoint":                            f.origin + RevokePath,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"scopes_supported":                               []string{Scope},
		"authorization_response_iss_parameter_supported": true,
		"client_id_metadata_document_supported":          true,
	})
}

// register is dynamic client registration (RFC 7591) of public clients.
func (f *Face) register(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, oauthError{Error: "invalid_request", Description: "register with POST"})
		return
	}
	var req struct {
		Name       string   `json:"client_name"`
		Redirects  []string `json:"redirect_uris"`
		AuthMethod string   `json:"token_endpoint_auth_method"`
		Grants     []string `json:"grant_types"`
		Responses  []string `json:"response_types"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxFormBody)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{Error: "invalid_client_metadata", Description: "the body is not a JSON client metadata document"})
		return
	}
	for _, g := range req.Grants {
		if g != "authorization_code" && g != "refresh_token" {
			writeJSON(w, http.StatusBadRequest, oauthError{Error: "invalid_client_metadata", Description: "grant_types: only authorization_code and refresh_token"})
			return
		}
	}
	if req.AuthMethod != "" && req.AuthMethod != "none" {
		writeJSON(w, http.StatusBadRequest, oauthError{Error: "invalid_client_metadata", Description: "token_endpoint_auth_method: only none (a public client with PKCE)"})
		return
	}
	c, err := f.tokens.Register(req.Name, req.Redirects)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{Error: "invalid_redirect_uri", Description: err.Error()})
		return
	}
	f.log.Info("oauth client registered", "client", c.ID, "name", c.Name)
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": c.ID, "client_name": c.Name, "redirect_uris": c.RedirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "client_id_issued_at": c.Created.Unix()})
}

// authorize starts an authorization (GET /authorize): a request it cannot
// trust the redirect URI of is an error page; any other error goes back
// to the client; a good one waits for the owner's approval.
func (f *Face) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c, err := f.client(r.Context(), q.Get("client_id"))
	if err != nil {
		f.page(w, http.StatusBadRequest, "Client not accepted", clientRefusal(err), "")
		return
	}
	redirect := q.Get("redirect_uri")
	if !exactlyOneOf(c.RedirectURIs, redirect) {
		f.page(w, http.StatusBadRequest, "Redirect URI mismatch", "The client asked to come back to an address it did not register (or list in its metadata document). Nothing was shared.", "")
		return
	}
	state := q.Get("state")
	fail := func(code, desc string) { f.redirectError(w, r, redirect, state, code, desc) }
	resource, err := f.resourceOf(q.Get("resource"))
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "only the authorization code flow (response_type=code)")
	case len(q.Get("code_challenge")) < 43 || len(q.Get("code_challenge")) > 128 || q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "PKCE with code_challenge_method=S256 is required")
	case err != nil:
		fail("invalid_target", err.Error())
	case q.Get("scope") != "" && q.Get("scope") != Scope:
		fail("invalid_scope", "the one scope is "+Scope)
	default:
		p, err := f.authz.add(c, redirect, state, q.Get("code_challenge"), resource)
		if err != nil {
			fail("temporarily_unavailable", err.Error())
			return
		}
		f.log.Info("oauth authorization waiting for approval", "client", c.ID, "name", c.Name)
		f.waitPage(w, p)
	}
}

// resourceOf is the resource an authorization asks for: "" is /mcp.
func (f *Face) resourceOf(raw string) (string, error) {
	if raw == "" || raw == f.Resource("") || raw == f.origin || raw == f.origin+"/" {
		return f.Resource(""), nil
	}
	if rest, ok := strings.CutPrefix(raw, f.origin); ok {
		if s, ok := ServerPath(rest); ok && s != "" {
			return f.Resource(s), nil
		}
	}
	return "", errors.New("this server's resources are " + f.Resource("") + " and " + f.Resource("<server>"))
}

func exactlyOneOf(list []string, v string) bool {
	for _, x := range list {
		if subtle.ConstantTimeCompare([]byte(x), []byte(v)) == 1 {
			return true
		}
	}
	return false
}

// redirectError sends the browser back to the client with an error
// (RFC 6749 §4.1.2.1), iss included (RFC 9207).
func (f *Face) redirectError(w http.ResponseWriter, r *http.Request, redirect, state, code, desc string) {
	v := url.Values{"error": {code}, "error_description": {desc}, "iss": {f.Issuer()}}
	if state != "" {
		v.Set("state", state)
	}
	http.Redirect(w, r, withQuery(redirect, v), http.StatusFound)
}

func withQuery(raw string, v url.Values) string {
	u, _ := url.Parse(raw) // checked when the client registered
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (a *authz) add(c access.Client, redirect, state, challenge, resource string) (*pending, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	for id, p := range a.pending {
		if now.After(p.expires) {
			delete(a.pending, id)
		}
	}
	if len(a.pending) >= maxPending {
		return nil, errors.New("too many authorizations are waiting for approval; try again in a few minutes")
	}
	label := clientLabel(c)
	p := &pending{id: randomString(16), userCode: userCode(), client: c, redirect: redirect, state: state, challenge: challenge,
		resource: resource, clientLabel: label, expires: now.Add(pendingTTL)}
	a.pending[p.id] = p
	return p, nil
}

// userCode is a short code a person types: 8 letters of an alphabet
// without look-alikes, as XXXX-XXXX (40 bits; a code lives ten minutes,
// Approve runs on the owner's machine only).
func userCode() string {
	const alphabet = "BCDFGHJKLMNPQRSTVWXZ"
	b := make([]byte, 8)
	rand.Read(b) // never fails (crypto/rand)
	out := make([]byte, 0, 9)
	for i, c := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, alphabet[int(c)%len(alphabet)])
	}
	return string(out)
}

func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// Pending describes an authorization waiting for approval, for the
// person who approves it.
type Pending struct {
	Client, ClientName, RedirectHost, Resource string
}

// Approve approves the authorization of code (as the page shows it) with
// a: the browser waiting on the page is sent back to the client with an
// authorization code. It returns what was approved.
func (f *Face) Approve(code string, a Approval) (Pending, error) {
	return f.authz.decide(strings.ToUpper(strings.TrimSpace(code)), &a)
}

// Deny refuses the authorization of code: the client is told
// access_denied.
func (f *Face) Deny(code string) (Pending, error) {
	return f.authz.decide(strings.ToUpper(strings.TrimSpace(code)), nil)
}

func (a *authz) decide(code string, ap *Approval) (Pending, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.pending {
		if subtle.ConstantTimeCompare([]byte(p.userCode), []byte(code)) != 1 || time.Now().After(p.expires) {
			continue
		}
		if p.approved != nil || p.denied {
			return Pending{}, errors.New("that authorization was already decided")
		}
		if ap == nil {
			p.denied = true
		} else {
			p.approved = ap
		}
		u, _ := url.Parse(p.redirect)
		return Pending{Client: p.client.ID, ClientName: p.clientLabel, RedirectHost: u.Host, Resource: p.resource}, nil
	}
	return Pending{}, fmt.Errorf("no authorization waits with the code %q: codes live %s; ask the client to sign in again", code, pendingTTL)
}

// wait is where the approval page polls: it sends the browser back to the
// client once the owner has decided.
func (f *Face) wait(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	f.authz.mu.Lock()
	p, ok := f.authz.pending[id]
	if ok && (p.approved != nil || p.denied || time.Now().After(p.expires)) {
		delete(f.authz.pending, id) // the page's id is good for one decision
	}
	var code string
	if ok && p.approved != nil {
		code = randomString(32)
		f.authz.codes[sha(code)] = issued{p: p, expires: time.Now().Add(codeTTL)}
	}
	f.authz.mu.Unlock()
	v := url.Values{"iss": {f.Issuer()}}
	switch {
	case !ok || time.Now().After(p.expires):
		f.page(w, http.StatusNotFound, "Expired", "This sign-in has expired or was already completed. Start again from your client.", "")
		return
	case p.denied:
		v.Set("error", "access_denied")
	case code != "":
		v.Set("code", code)
	default:
		f.waitPage(w, p)
		return
	}
	if p.state != "" {
		v.Set("state", p.state)
	}
	http.Redirect(w, r, withQuery(p.redirect, v), http.StatusFound)
}

var pageTmpl = template.Must(template.New("p").Parse(`<!doctype html><html><head><meta charset="utf-8">
{{if .Refresh}}<meta http-equiv="refresh" content="2;url={{.Refresh}}">{{end}}<title>mcpx: {{.Title}}</title>
<meta name="referrer" content="no-referrer"></head><body style="font-family:sans-serif;max-width:40em;margin:3em auto">
<h1>{{.Title}}</h1><p>{{.Text}}</p>{{if .Code}}<p style="font-size:2em;font-family:monospace" id="code">{{.Code}}</p>
<p>On the machine mcpx runs on, its owner approves with:</p><pre>mcpx auth approve {{.Code}}</pre>
<p>(or <code>mcpx auth approve {{.Code}} --servers NAME,… --roots DIR,… --ttl 8h</code> to give less). This page moves on by itself.</p>{{end}}
{{if .Consent}}<p>On a machine of the tailnet, with your own tailnet identity: <a id="consent" href="{{.Consent}}">approve in your browser on the tailnet</a>
(this browser must be on a tailnet machine; you choose the servers, roots and lifetime within your own grant).</p>{{end}}
</body></html>`))

func (f *Face) page(w http.ResponseWriter, status int, title, text, code string) {
	f.render(w, status, map[string]string{"Title": title, "Text": text, "Code": code})
}

func (f *Face) waitPage(w http.ResponseWriter, p *pending) {
	u, _ := url.Parse(p.redirect)
	f.render(w, http.StatusOK, map[string]string{"Title": "Approve " + p.clientLabel,
		"Text": "The client " + p.clientLabel + " (returning to " + u.Host + ") asks to use this mcpx server (" + p.resource + ").",
		"Code": p.userCode, "Refresh": waitPath + "?id=" + url.QueryEscape(p.id), "Consent": f.consentLink(p)})
}

func (f *Face) render(w http.ResponseWriter, status int, data map[string]string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.WriteHeader(status)
	pageTmpl.Execute(w, data) //nolint:errcheck // the client is gone if this fails
}
