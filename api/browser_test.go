package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"mcpx.dev/mcpx/api/dashboard"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// browser is a loopback TCP client that sends no token and no Mcpx-Client
// unless told, keeps no cookies and follows no redirects: what a page can
// send, spelled out.
func browser(d *apitest.Daemon) *apitest.Client {
	return &apitest.Client{Base: d.TCP.Base, HTTP: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// signIn posts token to /login as the sign-in page does and returns the
// session cookie ("name=value") and the CSRF secret.
func signIn(t *testing.T, c *apitest.Client, token string) (cookie, csrf string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"token": token})
	r := c.Do(t, "POST", "/login", string(body), "Content-Type", "application/json", wire.HeaderClient, "mcpx-dashboard",
		"Origin", c.Base)
	if r.StatusCode != 200 {
		t.Fatalf("sign in: %d %s", r.StatusCode, r.Bytes)
	}
	var ans struct{ CSRF string }
	r.Decode(t, &ans)
	cks := r.Cookies()
	if len(cks) != 1 || !cks[0].HttpOnly || cks[0].SameSite != http.SameSiteStrictMode || cks[0].Path != "/" || ans.CSRF == "" {
		t.Fatalf("sign in set %v (csrf %q), want one HttpOnly SameSite=Strict cookie for / and a secret", r.Header.Values("Set-Cookie"), ans.CSRF)
	}
	return cks[0].Name + "=" + cks[0].Value, ans.CSRF
}

// TestDashboardSignIn: the pages need a signed-in browser; signing in takes
// the daemon's token as JSON with Mcpx-Client from the broker's own origin;
// an API request with the session cookie needs the CSRF secret, a foreign
// Origin or Host is refused, and signing out ends the session.
func TestDashboardSignIn(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{})
	b := browser(d)

	// Anonymous: the dashboard redirects to the sign-in page, which (and what
	// it loads) is all that answers.
	r := b.Do(t, "GET", "/", "")
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/login?next=/" {
		t.Fatalf("anonymous GET /: %d %q, want a redirect to /login", r.StatusCode, r.Header.Get("Location"))
	}
	if r := b.Do(t, "GET", "/docs", ""); r.StatusCode != http.StatusSeeOther {
		t.Errorf("anonymous GET /docs: %d, want 303", r.StatusCode)
	}
	for _, p := range []string{"/ui/app.js", "/ui/api.js", "/ui/redoc.standalone.js"} {
		if r := b.Do(t, "GET", p, ""); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s: %d, want 401", p, r.StatusCode)
		}
	}
	r = b.Do(t, "GET", "/login", "")
	if r.StatusCode != 200 || !strings.Contains(string(r.Bytes), `id="login"`) {
		t.Fatalf("GET /login: %d %s", r.StatusCode, r.Bytes)
	}
	if csp := r.Header.Get("Content-Security-Policy"); csp != dashboard.Headers["Content-Security-Policy"] || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if r := b.Do(t, "GET", "/ui/login.js", ""); r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("GET /ui/login.js: %d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
	if r := b.Do(t, "GET", "/v1/whoami", ""); r.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous API request: %d, want 403 (browser guard)", r.StatusCode)
	}

	// Signing in: only as the page does it, with the right token.
	good := `{"token": "` + apitest.Token + `"}`
	for _, tc := range []struct {
		name    string
		body    string
		headers []string
		want    int
	}{
		{"form post", good, []string{"Content-Type", "application/x-www-form-urlencoded", wire.HeaderClient, "x"}, 403},
		{"no Mcpx-Client", good, []string{"Content-Type", "application/json"}, 403},
		{"other origin", good, []string{"Content-Type", "application/json", wire.HeaderClient, "x", "Origin", "http://evil.example"}, 403},
		{"wrong token", `{"token": "nope"}`, []string{"Content-Type", "application/json", wire.HeaderClient, "x"}, 401},
		{"no token", `{"token": ""}`, []string{"Content-Type", "application/json", wire.HeaderClient, "x"}, 401},
		{"not JSON", `token=1`, []string{"Content-Type", "application/json", wire.HeaderClient, "x"}, 400},
	} {
		if r := b.Do(t, "POST", "/login", tc.body, tc.headers...); r.StatusCode != tc.want || len(r.Cookies()) != 0 {
			t.Errorf("sign in, %s: %d %v, want %d and no cookie", tc.name, r.StatusCode, r.Header.Values("Set-Cookie"), tc.want)
		}
	}
	cookie, csrf := signIn(t, b, apitest.Token)

	// Signed in: the pages load; the API needs the secret too.
	for _, p := range []string{"/", "/docs", "/ui/app.js", "/ui/redoc.standalone.js"} {
		if r := b.Do(t, "GET", p, "", "Cookie", cookie); r.StatusCode != 200 {
			t.Errorf("signed-in GET %s: %d", p, r.StatusCode)
		}
	}
	if r := b.Do(t, "GET", "/v1/whoami", "", "Cookie", cookie); r.StatusCode != 403 || r.Problem(t).Field != wire.HeaderCSRF {
		t.Errorf("cookie without the secret: %d %s, want 403 naming %s", r.StatusCode, r.Bytes, wire.HeaderCSRF)
	}
	if r := b.Do(t, "GET", "/v1/whoami", "", "Cookie", cookie, wire.HeaderCSRF, csrf+"x"); r.StatusCode != 403 {
		t.Errorf("cookie with a wrong secret: %d, want 403", r.StatusCode)
	}
	r = b.Do(t, "GET", "/v1/whoami", "", "Cookie", cookie, wire.HeaderCSRF, csrf, "Origin", b.Base)
	var who wire.Whoami
	if r.StatusCode != 200 {
		t.Fatalf("signed-in whoami: %d %s", r.StatusCode, r.Bytes)
	}
	r.Decode(t, &who)
	if who.Caller.Via != wire.ViaTCPLoopback || !who.Caller.Owner {
		t.Errorf("signed in with the daemon's token, caller %+v, want the loopback owner", who.Caller)
	}
	if r := b.Do(t, "GET", "/v1/whoami", "", "Cookie", cookie, wire.HeaderCSRF, csrf, "Origin", "http://evil.example"); r.StatusCode != 403 {
		t.Errorf("session from another origin: %d, want 403", r.StatusCode)
	}
	// DNS rebinding: a page whose name resolves to 127.0.0.1 sends its own
	// name as Host.
	req, _ := http.NewRequest("GET", b.Base+"/v1/whoami", nil)
	req.Host = "evil.example"
	req.Header.Set("Cookie", cookie)
	req.Header.Set(wire.HeaderCSRF, csrf)
	if resp, err := b.HTTP.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("session under a foreign Host: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	// The session is good for the name it was made on only.
	other := browser(d)
	other.Base = strings.Replace(b.Base, "127.0.0.1", "localhost", 1)
	if r := other.Do(t, "GET", "/v1/whoami", "", "Cookie", cookie, wire.HeaderCSRF, csrf); r.StatusCode != 401 {
		t.Errorf("session under another loopback name: %d, want 401", r.StatusCode)
	}
	if r := d.Unix.Do(t, "GET", "/", ""); r.StatusCode != 404 {
		t.Errorf("GET / on the unix socket: %d, want 404", r.StatusCode)
	}

	// Signing out needs the secret, then ends the session.
	if r := b.Do(t, "POST", "/logout", "", "Cookie", cookie); r.StatusCode != 403 {
		t.Errorf("sign out without the secret: %d, want 403", r.StatusCode)
	}
	if r := b.Do(t, "POST", "/logout", "", "Cookie", cookie, wire.HeaderCSRF, csrf); r.StatusCode != 204 {
		t.Errorf("sign out: %d %s", r.StatusCode, r.Bytes)
	}
	if r := b.Do(t, "GET", "/v1/whoami", "", "Cookie", cookie, wire.HeaderCSRF, csrf); r.StatusCode != 401 {
		t.Errorf("after signing out: %d, want 401", r.StatusCode)
	}
	if r := b.Do(t, "GET", "/", "", "Cookie", cookie); r.StatusCode != http.StatusSeeOther {
		t.Errorf("GET / after signing out: %d, want 303", r.StatusCode)
	}
}

// TestDashboardSignedTokenSession: a browser signed in with a signed token
// has exactly the token's rights, and revoking the token ends the session
// on its next request.
func TestDashboardSignedTokenSession(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box"})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": "", "billing": ""}), Tokens: is})
	m := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "viewer", Rule: rights.Rule{Servers: []string{"demo"}}, TTL: "1h"})
	b := browser(d)
	cookie, csrf := signIn(t, b, m.Token)
	var list wire.ServerList
	r := b.Do(t, "GET", "/v1/servers", "", "Cookie", cookie, wire.HeaderCSRF, csrf)
	if r.StatusCode != 200 {
		t.Fatalf("servers: %d %s", r.StatusCode, r.Bytes)
	}
	r.Decode(t, &list)
	if len(list.Servers) != 1 || list.Servers[0].Name != "demo" {
		t.Errorf("a viewer's servers: %+v, want demo only", list.Servers)
	}
	if r := b.Do(t, "GET", "/v1/stats", "", "Cookie", cookie, wire.HeaderCSRF, csrf); r.StatusCode != 403 {
		t.Errorf("a non-admin session on an admin route: %d, want 403", r.StatusCode)
	}
	if r := d.Unix.Do(t, "DELETE", "/v1/tokens/"+m.Info.ID, ""); r.StatusCode != 200 {
		t.Fatalf("revoke: %d %s", r.StatusCode, r.Bytes)
	}
	if r := b.Do(t, "GET", "/v1/servers", "", "Cookie", cookie, wire.HeaderCSRF, csrf); r.StatusCode != 401 {
		t.Errorf("session of a revoked token: %d %s, want 401", r.StatusCode, r.Bytes)
	}
}

// TestDashboardRevalidates: pages and scripts carry an ETag, a matching
// If-None-Match is answered 304 with no body, and the scripts are sent
// compressed to a browser that accepts it.
func TestDashboardRevalidates(t *testing.T) {
	d := apitest.Start(t, apitest.Options{})
	b := browser(d)
	cookie, _ := signIn(t, b, apitest.Token)
	r := b.Do(t, "GET", "/ui/redoc.standalone.js", "", "Cookie", cookie, "Accept-Encoding", "gzip")
	tag := r.Header.Get("ETag")
	if r.StatusCode != 200 || tag == "" || r.Header.Get("Content-Encoding") != "gzip" || len(r.Bytes) > 1<<20 {
		t.Fatalf("GET the Redoc bundle: %d, ETag %q, Content-Encoding %q, %d bytes; want 200, an ETag, gzip under 1 MB",
			r.StatusCode, tag, r.Header.Get("Content-Encoding"), len(r.Bytes))
	}
	r = b.Do(t, "GET", "/ui/redoc.standalone.js", "", "Cookie", cookie, "If-None-Match", tag)
	if r.StatusCode != http.StatusNotModified || len(r.Bytes) != 0 {
		t.Errorf("revalidating: %d with %d bytes, want 304 and none", r.StatusCode, len(r.Bytes))
	}
	if r := b.Do(t, "GET", "/ui/app.js", "", "Cookie", cookie, "If-None-Match", tag); r.StatusCode != 200 {
		t.Errorf("another file with the bundle's ETag: %d, want 200", r.StatusCode)
	}
}
