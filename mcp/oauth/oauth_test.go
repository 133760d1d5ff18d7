package oauth_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/oauthtest"
	"mcpx.dev/mcpx/mcp/oauth"
)

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
	hc := &http.Client{Transport: c.Transport(server, "", nil)}
	resp, err := hc.Post(u, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// signIn signs c in to its server "hosted" as the owner, through browse.
func signIn(t *testing.T, c *oauth.Client) {
	t.Helper()
	login, err := c.Begin(t.Context(), "hosted", "", "http://127.0.0.1:9/callback")
	if err != nil {
		t.Fatal(err)
	}
	q := browse(t, login.URL)
	if _, err := c.Complete(t.Context(), "hosted", "", q.Get("state"), q.Get("code"), q.Get("iss")); err != nil {
		t.Fatal(err)
	}
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
	p := oauthtest.New(t, nil)
	p.ExpiresIn = 60
	dir := filepath.Join(t.TempDir(), "oauth")
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clk := &clock{t: time.Now()}
	newClient := func() *oauth.Client {
		c := oauth.New(oauth.Options{Dir: dir, Logger: log, Now: clk.now})
		c.SetServers(map[string]oauth.Server{"hosted": {URL: p.MCPURL()}})
		return c
	}
	c := newClient()

	_, err := post(c, "hosted", p.MCPURL())
	var req *oauth.RequiredError
	if !errors.As(err, &req) || req.Server != "hosted" {
		t.Fatalf("a request before sign-in: %v, want a RequiredError", err)
	}
	if st, _ := c.Status("hosted", ""); !st.NeedsSignIn || st.SignedIn {
		t.Errorf("status before sign-in: %+v", st)
	}

	redirect := "http://127.0.0.1:9/callback"
	login, err := c.Begin(t.Context(), "hosted", "", redirect)
	if err != nil {
		t.Fatal(err)
	}
	q := browse(t, login.URL)
	if q.Get("state") != login.State {
		t.Fatalf("state %q came back, want %q", q.Get("state"), login.State)
	}
	if _, err := c.Complete(t.Context(), "hosted", "", "not-the-state", q.Get("code"), q.Get("iss")); err == nil {
		t.Error("Complete took an unknown state")
	}
	st, err := c.Complete(t.Context(), "hosted", "", q.Get("state"), q.Get("code"), q.Get("iss"))
	if err != nil {
		t.Fatal(err)
	}
	if !st.SignedIn || st.NeedsSignIn || !st.Refresh || st.Client != "registered" || st.Issuer != p.AS.URL {
		t.Errorf("status after sign-in: %+v", st)
	}
	if code, err := post(c, "hosted", p.MCPURL()); err != nil || code != 200 {
		t.Fatalf("a request after sign-in: %d, %v", code, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "hosted.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the stored sign-in: %v, mode %v; want 0600", err, fi.Mode())
	}

	// Expired: the next request refreshes first, and the refresh token rotates.
	clk.add(2 * time.Minute)
	if code, err := post(c, "hosted", p.MCPURL()); err != nil || code != 200 {
		t.Fatalf("a request after expiry: %d, %v", code, err)
	}
	if live := p.LiveRefreshTokens(); live != 1 {
		t.Errorf("%d refresh tokens are good, want 1 (the rotated one)", live)
	}

	// A restarted daemon reads the sign-in back.
	c = newClient()
	if code, err := post(c, "hosted", p.MCPURL()); err != nil || code != 200 {
		t.Fatalf("a request from a new client on the same directory: %d, %v", code, err)
	}

	// A second sign-in reuses the registration for the same redirect URI.
	login, err = c.Begin(t.Context(), "hosted", "", redirect)
	if err != nil {
		t.Fatal(err)
	}
	q = browse(t, login.URL)
	if _, err := c.Complete(t.Context(), "hosted", "", q.Get("state"), q.Get("code"), q.Get("iss")); err != nil {
		t.Fatal(err)
	}
	if n := p.Registered(); n != 1 {
		t.Errorf("registered %d times, want 1", n)
	}

	revoked, err := c.Logout(t.Context(), "hosted", "")
	if err != nil || !revoked {
		t.Fatalf("Logout: revoked %v, %v", revoked, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "hosted.json")); !os.IsNotExist(err) {
		t.Errorf("the sign-in file is still there after logout: %v", err)
	}
	if _, err := post(c, "hosted", p.MCPURL()); !errors.As(err, &req) {
		t.Errorf("a request after logout: %v, want a RequiredError", err)
	}

	logMu.Lock()
	text := logs.String()
	logMu.Unlock()
	if !strings.Contains(text, "signed in") || !strings.Contains(text, "refreshed") {
		t.Errorf("the log says nothing of the sign-in or the refresh:\n%s", text)
	}
	for _, s := range append(p.Issued(), login.State) {
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
			p := oauthtest.New(t, nil)
			p.PRMPath, p.Resource = tc.prmPath, tc.resource
			var ch oauth.Challenge
			if tc.challenge {
				ch.ResourceMetadata = p.RS.URL + tc.prmPath
			}
			m, err := oauth.Discover(t.Context(), http.DefaultClient, p.MCPURL(), ch)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Discover: %v, want an error about %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"as": p.AS.URL, "rs": p.RS.URL}[tc.wantIssuer]
			if m.Server.Issuer != want {
				t.Errorf("issuer %q, want %q", m.Server.Issuer, want)
			}
			if tc.wantIssuer == "rs" && m.Server.TokenEndpoint != p.RS.URL+"/token" {
				t.Errorf("fallback token endpoint %q", m.Server.TokenEndpoint)
			}
			if m.Resource != p.MCPURL() {
				t.Errorf("resource %q, want %q", m.Resource, p.MCPURL())
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

// TestRefreshRevoked: a refresh the authorization server refuses (the
// grant was revoked there) turns into one "sign in again", and the next
// request fails at once with the same, not a loop of 401s.
func TestRefreshRevoked(t *testing.T) {
	p := oauthtest.New(t, nil)
	p.ExpiresIn = 60
	clk := &clock{t: time.Now()}
	c := oauth.New(oauth.Options{Now: clk.now})
	c.SetServers(map[string]oauth.Server{"hosted": {URL: p.MCPURL()}})
	signIn(t, c)
	p.RevokeAll()
	clk.add(2 * time.Minute)
	var req *oauth.RequiredError
	if _, err := post(c, "hosted", p.MCPURL()); !errors.As(err, &req) || !strings.Contains(req.Reason, "refresh") {
		t.Fatalf("a request after the grant was revoked: %v, want sign in again after a failed refresh", err)
	}
	hits := p.MCPRequests()
	if _, err := post(c, "hosted", p.MCPURL()); !errors.As(err, &req) {
		t.Fatalf("the next request: %v, want the same RequiredError at once", err)
	}
	if st, _ := c.Status("hosted", ""); !st.NeedsSignIn {
		t.Errorf("status: %+v, want NeedsSignIn", st)
	}
	if p.MCPRequests() != hits {
		t.Error("the next request reached the server: a sign-in needed fails at once")
	}
}

// TestShortTokenRefresh: an access token of a few seconds is used for
// most of its life, not refreshed before every request (the 30 s margin
// shrinks to a quarter of its lifetime), and refreshed once near its end.
func TestShortTokenRefresh(t *testing.T) {
	p := oauthtest.New(t, nil)
	p.ExpiresIn = 8
	clk := &clock{t: time.Now()}
	c := oauth.New(oauth.Options{Now: clk.now})
	c.SetServers(map[string]oauth.Server{"hosted": {URL: p.MCPURL()}})
	signIn(t, c)
	issued := len(p.Issued())
	clk.add(time.Second)
	for range 3 {
		if code, err := post(c, "hosted", p.MCPURL()); err != nil || code != 200 {
			t.Fatalf("a request with a fresh token: %d, %v", code, err)
		}
	}
	if n := len(p.Issued()) - issued; n != 0 {
		t.Errorf("requests in the token's first second got %d new tokens; want none", n)
	}
	clk.add(6500 * time.Millisecond) // within the last quarter
	for range 2 {
		if code, err := post(c, "hosted", p.MCPURL()); err != nil || code != 200 {
			t.Fatalf("a request near expiry: %d, %v", code, err)
		}
	}
	if n := len(p.Issued()) - issued; n != 2 {
		t.Errorf("requests near expiry got %d new tokens; want one refresh (an access and a refresh token)", n)
	}
}

// TestClientMetadata: the document names its own URL as client_id, a
// public native client with the CLI's loopback redirect; a URL the draft
// forbids is refused with what it lacks.
func TestClientMetadata(t *testing.T) {
	m, err := oauth.NewClientMetadata("https://example.com/mcpx/client.json", "", 8123)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(m.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["client_id"] != "https://example.com/mcpx/client.json" || doc["client_name"] != "mcpx" || doc["token_endpoint_auth_method"] != "none" ||
		fmt.Sprint(doc["redirect_uris"]) != "[http://127.0.0.1/callback http://127.0.0.1:8123/callback]" {
		t.Errorf("the document: %s", m.JSON())
	}
	for u, want := range map[string]string{
		"http://example.com/c.json":           "https",
		"https://example.com/":                "path",
		"https://example.com/c.json#x":        "fragment",
		"https://u:p@example.com/c.json":      "user",
		"https://example.com/a/../c.json":     "..",
		"https://example.com/a/./c.json":      ".",
		"https://example.com/client.json?x=1": "",
	} {
		_, err := oauth.NewClientMetadata(u, "", 0)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want an error saying %q", u, err, want)
		}
	}
}

// TestPerCallerAccounts: on a PerCaller server each account signs in for
// itself, into a file of its own below <dir>/callers/<server>, whatever
// its name ("../" included); its transport carries its own token and no
// other account's; on a server that is not PerCaller every account is the
// server's one sign-in.
func TestPerCallerAccounts(t *testing.T) {
	p := oauthtest.New(t, nil)
	dir := filepath.Join(t.TempDir(), "oauth")
	c := oauth.New(oauth.Options{Dir: dir})
	c.SetServers(map[string]oauth.Server{"hosted": {URL: p.MCPURL(), PerCaller: true}, "shared": {URL: p.MCPURL()}})
	evil := "@jwt:../../escaped"
	signIn := func(server, account string) {
		t.Helper()
		login, err := c.Begin(t.Context(), server, account, "http://127.0.0.1:9/callback")
		if err != nil {
			t.Fatal(err)
		}
		q := browse(t, login.URL)
		if _, err := c.Complete(t.Context(), server, account, q.Get("state"), q.Get("code"), q.Get("iss")); err != nil {
			t.Fatal(err)
		}
	}
	signIn("hosted", evil)
	if st, _ := c.Status("hosted", evil); !st.SignedIn || st.Account != evil {
		t.Errorf("the account's status: %+v", st)
	}
	if st, _ := c.Status("hosted", "@jwt:bob"); st.SignedIn {
		t.Error("another account of the server is signed in by the first's sign-in")
	}
	if _, err := post(c, "hosted", p.MCPURL()); err == nil {
		t.Error("the server's own sign-in (no account) carries an account's token")
	}
	hc := &http.Client{Transport: c.Transport("hosted", evil, nil)}
	if resp, err := hc.Post(p.MCPURL(), "application/json", strings.NewReader(`{}`)); err != nil || resp.StatusCode != 200 {
		t.Errorf("the account's own request: %v %v", resp, err)
	}
	var files []string
	filepath.WalkDir(filepath.Dir(dir), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(path, filepath.Dir(dir)+"/"))
		}
		return nil
	})
	if len(files) != 1 || !strings.HasPrefix(files[0], "oauth/callers/hosted/") || strings.Contains(files[0], "..") {
		t.Errorf("files: %v, want one below oauth/callers/hosted", files)
	}
	if got := c.Accounts("hosted"); len(got) != 1 || got[0] != evil {
		t.Errorf("Accounts = %v", got)
	}
	signIn("shared", "@jwt:carol")
	if st, _ := c.Status("shared", "@jwt:dave"); !st.SignedIn || st.Account != "" {
		t.Errorf("a server that is not PerCaller: %+v, want its one sign-in for every account", st)
	}
}

// TestOfflineAccessAsksConsent: asking for offline_access (the
// authorization server lists it) asks for consent too, as OpenID Connect
// wants before it issues a refresh token.
func TestOfflineAccessAsksConsent(t *testing.T) {
	p := oauthtest.New(t, nil)
	c := oauth.New(oauth.Options{})
	c.SetServers(map[string]oauth.Server{"hosted": {URL: p.MCPURL()}})
	login, err := c.Begin(t.Context(), "hosted", "", "http://127.0.0.1:9/callback")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(login.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if !slices.Contains(strings.Fields(q.Get("scope")), "offline_access") || q.Get("prompt") != "consent" {
		t.Errorf("the authorization request asks scope %q, prompt %q; want offline_access with prompt=consent", q.Get("scope"), q.Get("prompt"))
	}
}
