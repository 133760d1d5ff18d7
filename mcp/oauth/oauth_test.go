package oauth_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/mcp/oauth"
)

// provider is an authorization server and an MCP resource server behind
// it, at the edge of the machine: the hosted server a user signs in to.
type provider struct {
	t          *testing.T
	as, rs     *httptest.Server
	mu         sync.Mutex
	codes      map[string]codeGrant // code → grant
	access     map[string]bool      // valid access tokens
	refresh    map[string]bool      // valid refresh tokens
	revoked    []string
	registered int
	issued     []string // every token, code and secret handed out: none may be logged
	expiresIn  int
	prmPath    string // where the resource metadata is served; "" = none
	resource   string // the resource the metadata names; "" = the MCP endpoint
}

type codeGrant struct{ challenge, resource, clientID, redirect string }

func newProvider(t *testing.T) *provider {
	p := &provider{t: t, codes: map[string]codeGrant{}, access: map[string]bool{}, refresh: map[string]bool{}, expiresIn: 3600,
		prmPath: "/.well-known/oauth-protected-resource/mcp"}
	p.as = httptest.NewServer(http.HandlerFunc(p.serveAS))
	p.rs = httptest.NewServer(http.HandlerFunc(p.serveRS))
	t.Cleanup(p.as.Close)
	t.Cleanup(p.rs.Close)
	return p
}

func (p *provider) mcpURL() string { return p.rs.URL + "/mcp" }

func (p *provider) token(prefix string) string {
	s := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), len(p.issued))
	p.issued = append(p.issued, s)
	return s
}

func (p *provider) serveRS(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prmPath != "" && r.URL.Path == p.prmPath {
		res := p.resource
		if res == "" {
			res = p.mcpURL()
		}
		writeJSON(w, map[string]any{"resource": res, "authorization_servers": []string{p.as.URL}, "scopes_supported": []string{"mcp:read"}})
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !p.access[tok] {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s%s", scope="mcp:read"`, p.rs.URL, p.prmPath))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}})
}

func (p *provider) serveAS(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeJSON(w, map[string]any{"issuer": p.as.URL, "authorization_endpoint": p.as.URL + "/authorize",
			"token_endpoint": p.as.URL + "/token", "registration_endpoint": p.as.URL + "/register",
			"revocation_endpoint": p.as.URL + "/revoke", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "scopes_supported": []string{"mcp:read", "offline_access"},
			"token_endpoint_auth_methods_supported":          []string{"client_secret_post"},
			"authorization_response_iss_parameter_supported": true})
	case "/register":
		var m struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		p.registered++
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, map[string]any{"client_id": "client-1", "client_secret": p.token("secret"),
			"redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "client_secret_post"})
	case "/authorize":
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") != p.mcpURL() || q.Get("state") == "" ||
			!strings.Contains(q.Get("scope"), "mcp:read") || !strings.Contains(q.Get("scope"), "offline_access") {
			http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		code := p.token("code")
		p.codes[code] = codeGrant{q.Get("code_challenge"), q.Get("resource"), q.Get("client_id"), q.Get("redirect_uri")}
		back := q.Get("redirect_uri") + "?" + url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {p.as.URL}}.Encode()
		http.Redirect(w, r, back, http.StatusFound)
	case "/token":
		p.serveToken(w, r)
	case "/revoke":
		r.ParseForm()
		p.revoked = append(p.revoked, r.Form.Get("token_type_hint"))
		delete(p.access, r.Form.Get("token"))
		delete(p.refresh, r.Form.Get("token"))
	default:
		http.NotFound(w, r)
	}
}

func (p *provider) serveToken(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	f := r.Form
	if f.Get("resource") != p.mcpURL() || f.Get("client_id") != "client-1" || f.Get("client_secret") == "" {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := p.codes[f.Get("code")]
		delete(p.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || f.Get("redirect_uri") != g.redirect {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
	case "refresh_token":
		if !p.refresh[f.Get("refresh_token")] {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		delete(p.refresh, f.Get("refresh_token")) // rotation: a refresh token is good once
	default:
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	at, rt := p.token("access"), p.token("refresh")
	p.access[at], p.refresh[rt] = true, true
	writeJSON(w, map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt,
		"expires_in": p.expiresIn, "scope": "mcp:read offline_access"})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// clock is a settable Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// post makes one MCP request through the server's transport.
func post(c *oauth.Client, server, u string) (int, error) {
	hc := &http.Client{Transport: c.Transport(server, nil)}
	resp, err := hc.Post(u, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// browse follows the authorization URL as a browser would, up to the
// redirect to the loopback listener, and returns that redirect's query.
func browse(t *testing.T, authURL string) url.Values {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("the authorization endpoint answered %s: %s", resp.Status, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc.Query()
}

// TestSignInRefreshLogout walks one server's life: a request that needs
// sign-in fails at once; Begin and Complete sign in (discovery from the
// 401, registration, PKCE, resource, iss); requests carry the token; an
// expired one is refreshed and rotated; a new Client on the same directory
// (a restarted daemon) carries on; Logout revokes and deletes. Nothing it
// logged holds a token, code, verifier or secret.
func TestSignInRefreshLogout(t *testing.T) {
	p := newProvider(t)
	p.expiresIn = 60
	dir := filepath.Join(t.TempDir(), "oauth")
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clk := &clock{t: time.Now()}
	newClient := func() *oauth.Client {
		c := oauth.New(oauth.Options{Dir: dir, Logger: log, Now: clk.now})
		c.SetServers(map[string]oauth.Server{"hosted": {URL: p.mcpURL()}})
		return c
	}
	c := newClient()

	_, err := post(c, "hosted", p.mcpURL())
	var req *oauth.RequiredError
	if !errors.As(err, &req) || req.Server != "hosted" {
		t.Fatalf("a request before sign-in: %v, want a RequiredError", err)
	}
	if st, _ := c.Status("hosted"); !st.NeedsSignIn || st.SignedIn {
		t.Errorf("status before sign-in: %+v", st)
	}

	redirect := "http://127.0.0.1:9/callback"
	login, err := c.Begin(t.Context(), "hosted", redirect)
	if err != nil {
		t.Fatal(err)
	}
	q := browse(t, login.URL)
	if q.Get("state") != login.State {
		t.Fatalf("state %q came back, want %q", q.Get("state"), login.State)
	}
	if _, err := c.Complete(t.Context(), "hosted", "not-the-state", q.Get("code"), q.Get("iss")); err == nil {
		t.Error("Complete took an unknown state")
	}
	st, err := c.Complete(t.Context(), "hosted", q.Get("state"), q.Get("code"), q.Get("iss"))
	if err != nil {
		t.Fatal(err)
	}
	if !st.SignedIn || st.NeedsSignIn || !st.Refresh || st.Client != "registered" || st.Issuer != p.as.URL {
		t.Errorf("status after sign-in: %+v", st)
	}
	if code, err := post(c, "hosted", p.mcpURL()); err != nil || code != 200 {
		t.Fatalf("a request after sign-in: %d, %v", code, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "hosted.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the stored sign-in: %v, mode %v; want 0600", err, fi.Mode())
	}

	// Expired: the next request refreshes first, and the refresh token rotates.
	clk.add(2 * time.Minute)
	if code, err := post(c, "hosted", p.mcpURL()); err != nil || code != 200 {
		t.Fatalf("a request after expiry: %d, %v", code, err)
	}
	p.mu.Lock()
	live := len(p.refresh)
	p.mu.Unlock()
	if live != 1 {
		t.Errorf("%d refresh tokens are good, want 1 (the rotated one)", live)
	}

	// A restarted daemon reads the sign-in back.
	c = newClient()
	if code, err := post(c, "hosted", p.mcpURL()); err != nil || code != 200 {
		t.Fatalf("a request from a new client on the same directory: %d, %v", code, err)
	}

	// A second sign-in reuses the registration for the same redirect URI.
	login, err = c.Begin(t.Context(), "hosted", redirect)
	if err != nil {
		t.Fatal(err)
	}
	q = browse(t, login.URL)
	if _, err := c.Complete(t.Context(), "hosted", q.Get("state"), q.Get("code"), q.Get("iss")); err != nil {
		t.Fatal(err)
	}
	if p.registered != 1 {
		t.Errorf("registered %d times, want 1", p.registered)
	}

	revoked, err := c.Logout(t.Context(), "hosted")
	if err != nil || !revoked {
		t.Fatalf("Logout: revoked %v, %v", revoked, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "hosted.json")); !os.IsNotExist(err) {
		t.Errorf("the sign-in file is still there after logout: %v", err)
	}
	if _, err := post(c, "hosted", p.mcpURL()); !errors.As(err, &req) {
		t.Errorf("a request after logout: %v, want a RequiredError", err)
	}

	logMu.Lock()
	text := logs.String()
	logMu.Unlock()
	if !strings.Contains(text, "signed in") || !strings.Contains(text, "refreshed") {
		t.Errorf("the log says nothing of the sign-in or the refresh:\n%s", text)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range append(p.issued, login.State) {
		if strings.Contains(text, s) {
			t.Errorf("the log holds a secret %q:\n%s", s, text)
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestDiscover: where the resource metadata is looked for, in the spec's
// order, and what is refused.
func TestDiscover(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prmPath   string // where the provider serves it
		challenge bool   // the 401 names it
		resource  string // what it says the resource is ("" = the endpoint)
		wantIssuer,
		wantErr string
	}{
		{name: "from the challenge", prmPath: "/custom/prm", challenge: true, wantIssuer: "as"},
		{name: "well-known with the path", prmPath: "/.well-known/oauth-protected-resource/mcp", wantIssuer: "as"},
		{name: "no metadata: the 2025-03-26 fallback", prmPath: "", wantIssuer: "rs"},
		{name: "a resource that is not the server", prmPath: "/.well-known/oauth-protected-resource/mcp",
			resource: "https://evil.example/mcp", wantErr: "resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t)
			p.prmPath, p.resource = tc.prmPath, tc.resource
			var ch oauth.Challenge
			if tc.challenge {
				ch.ResourceMetadata = p.rs.URL + tc.prmPath
			}
			m, err := oauth.Discover(t.Context(), http.DefaultClient, p.mcpURL(), ch)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Discover: %v, want an error about %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"as": p.as.URL, "rs": p.rs.URL}[tc.wantIssuer]
			if m.Server.Issuer != want {
				t.Errorf("issuer %q, want %q", m.Server.Issuer, want)
			}
			if tc.wantIssuer == "rs" && m.Server.TokenEndpoint != p.rs.URL+"/token" {
				t.Errorf("fallback token endpoint %q", m.Server.TokenEndpoint)
			}
			if m.Resource != p.mcpURL() {
				t.Errorf("resource %q, want %q", m.Resource, p.mcpURL())
			}
		})
	}
}

// TestParseChallenge reads the Bearer challenge's parameters.
func TestParseChallenge(t *testing.T) {
	ch := oauth.ParseChallenge([]string{`Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="https://r/prm"`})
	if ch.Error != "insufficient_scope" || strings.Join(ch.Scopes, ",") != "a,b" || ch.ResourceMetadata != "https://r/prm" {
		t.Errorf("%+v", ch)
	}
}
