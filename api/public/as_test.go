package public_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
)

const origin = "https://mcpx.example"

type asTest struct {
	t     *testing.T
	face  *public.Face
	srv   *httptest.Server
	hc    *http.Client
	store *access.Store
}

func newAS(t *testing.T) *asTest {
	t.Helper()
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := public.New(public.Options{URL: origin, Tokens: st, Limit: public.Limit{Rate: 1000, Burst: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &asTest{t: t, face: f, srv: srv, hc: hc, store: st}
}

func (a *asTest) do(method, path, ctype, body string) (*http.Response, string) {
	a.t.Helper()
	req, _ := http.NewRequestWithContext(a.t.Context(), method, a.srv.URL+path, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (a *asTest) form(path string, v url.Values) (int, map[string]any) {
	a.t.Helper()
	resp, body := a.do("POST", path, "application/x-www-form-urlencoded", v.Encode())
	var m map[string]any
	json.Unmarshal([]byte(body), &m)
	return resp.StatusCode, m
}

func (a *asTest) register(redirect string) string {
	a.t.Helper()
	resp, body := a.do("POST", public.RegisterPath, "application/json", `{"client_name":"Test App","redirect_uris":["`+redirect+`"]}`)
	var m struct {
		ID string `json:"client_id"`
	}
	if json.Unmarshal([]byte(body), &m); resp.StatusCode != http.StatusCreated || m.ID == "" {
		a.t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	return m.ID
}

func challengeOf(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

const verifier = "dBjftJeZ4CVP-mJ92K27uhbUJU1p1r7wW1gFWFOEjXk-verifier"
const redirect = "https://app.example/callback"

func authorizeQuery(client, redirect, challenge string) string {
	return public.AuthorizePath + "?" + url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {"st4te"}, "resource": {origin + "/mcp"}, "scope": {"mcp"}}.Encode()
}

var codeRE = regexp.MustCompile(`id="code">([A-Z]{4}-[A-Z]{4})<`)
var waitRE = regexp.MustCompile(`url=(/authorize/wait\?id=[^"]+)"`)

// signIn runs the flow up to the authorization code, approved with a.
func (a *asTest) signIn(client string, ap public.Approval) (code string) {
	a.t.Helper()
	resp, page := a.do("GET", authorizeQuery(client, redirect, challengeOf(verifier)), "", "")
	uc, wait := codeRE.FindStringSubmatch(page), waitRE.FindStringSubmatch(page)
	if resp.StatusCode != 200 || uc == nil || wait == nil {
		a.t.Fatalf("authorize: %d %s", resp.StatusCode, page)
	}
	waitURL := strings.ReplaceAll(wait[1], "&amp;", "&")
	if resp, _ := a.do("GET", waitURL, "", ""); resp.StatusCode != 200 {
		a.t.Fatalf("waiting before approval: %d", resp.StatusCode)
	}
	p, err := a.face.Approve(strings.ToLower(uc[1]), ap)
	if err != nil || p.ClientName != "Test App" || p.RedirectHost != "app.example" {
		a.t.Fatalf("approve: %+v %v", p, err)
	}
	if _, err := a.face.Approve(uc[1], ap); err == nil {
		a.t.Fatal("approved twice")
	}
	resp, _ = a.do("GET", waitURL, "", "")
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Host != "app.example" || loc.Query().Get("iss") != origin || loc.Query().Get("state") != "st4te" || loc.Query().Get("code") == "" {
		a.t.Fatalf("after approval: %d %s", resp.StatusCode, loc)
	}
	return loc.Query().Get("code")
}

// TestAuthorizationCodeFlow: register, authorize, approve, exchange with
// PKCE, use, refresh (rotation), reuse of a rotated refresh token revokes
// the sign-in, revocation.
func TestAuthorizationCodeFlow(t *testing.T) {
	t.Parallel()
	a := newAS(t)
	resp, body := a.do("GET", public.ASMetadataPath, "", "")
	var md map[string]any
	json.Unmarshal([]byte(body), &md)
	if resp.StatusCode != 200 || md["issuer"] != origin || md["token_endpoint"] != origin+"/token" ||
		md["authorization_response_iss_parameter_supported"] != true || !strings.Contains(body, `"code_challenge_methods_supported":["S256"]`) {
		t.Fatalf("metadata: %d %s", resp.StatusCode, body)
	}
	client := a.register(redirect)
	code := a.signIn(client, public.Approval{Approver: "owner-demo", Rights: rights.Rights{{Servers: []string{"demo"}}}})
	st, tok := a.form(public.TokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {client},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {origin + "/mcp"}})
	at, _ := tok["access_token"].(string)
	rt, _ := tok["refresh_token"].(string)
	if st != 200 || at == "" || rt == "" || tok["token_type"] != "Bearer" {
		t.Fatalf("token: %d %v", st, tok)
	}
	check := func(secret string) error {
		req := httptest.NewRequest("POST", origin+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		got, err := a.face.Authenticate(req, "")
		if err == nil && got.Approver == "owner-demo" && (!got.Rights.MayUse("demo") || got.Rights.MayUse("other")) {
			t.Fatalf("the token's rights: %+v", got.Rights)
		}
		return err
	}
	if err := check(at); err != nil {
		t.Fatal(err)
	}
	if err := check(rt); err == nil {
		t.Fatal("a refresh token admitted as an access token")
	}
	// A code is good once.
	if st, m := a.form(public.TokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {client},
		"redirect_uri": {redirect}, "code_verifier": {verifier}}); st != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("reused code: %d %v", st, m)
	}
	// Client binding: another client can neither refresh this client's
	// sign-in nor revoke it, and trying spends nothing of it.
	other := a.register(redirect)
	if st, m := a.form(public.TokenPath, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {other}}); st != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("a refresh on another client's behalf: %d %v", st, m)
	}
	if st, _ := a.form(public.RevokePath, url.Values{"token": {at}, "client_id": {other}}); st != 200 {
		t.Fatalf("a revocation on another client's behalf: %d, want 200 (RFC 7009) and nothing revoked", st)
	}
	if err := check(at); err != nil {
		t.Fatalf("another client revoked this client's token: %v", err)
	}
	st, tok2 := a.form(public.TokenPath, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {client}})
	at2, _ := tok2["access_token"].(string)
	rt2, _ := tok2["refresh_token"].(string)
	if st != 200 || at2 == "" || rt2 == "" || rt2 == rt {
		t.Fatalf("refresh: %d %v", st, tok2)
	}
	if err := check(at2); err != nil {
		t.Fatal(err)
	}
	// The rotated refresh token again: the whole sign-in is revoked.
	if st, m := a.form(public.TokenPath, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {client}}); st != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("reused refresh token: %d %v", st, m)
	}
	for _, s := range []string{at, at2} {
		if err := check(s); err == nil {
			t.Fatal("an access token of a revoked sign-in still works")
		}
	}
	// Revocation (RFC 7009) of a new sign-in's access token revokes it.
	code = a.signIn(client, public.Approval{Approver: "owner", Rights: rights.All()})
	_, tok3 := a.form(public.TokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {client},
		"redirect_uri": {redirect}, "code_verifier": {verifier}})
	at3, _ := tok3["access_token"].(string)
	if err := check(at3); err != nil {
		t.Fatal(err)
	}
	if st, _ := a.form(public.RevokePath, url.Values{"token": {at3}}); st != 200 {
		t.Fatalf("revoke: %d", st)
	}
	if err := check(at3); err == nil {
		t.Fatal("a revoked token still works")
	}
}

// TestAuthorizationProbes: each is refused, and no answer carries a
// secret sent.
func TestAuthorizationProbes(t *testing.T) {
	t.Parallel()
	a := newAS(t)
	client := a.register(redirect)
	ch := challengeOf(verifier)
	// Redirect URIs the client did not register, by one character: an
	// error page, never a redirect.
	for _, r := range []string{redirect + "x", "https://app.example/callbacK", "https://app.example.evil/callback", redirect + "?a=1"} {
		if resp, _ := a.do("GET", authorizeQuery(client, r, ch), "", ""); resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
			t.Errorf("redirect %q: %d to %q", r, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if resp, _ := a.do("GET", authorizeQuery("mcpxc_unknown", redirect, ch), "", ""); resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
		t.Errorf("unknown client: %d", resp.StatusCode)
	}
	// Errors the client is told of: implicit, plain PKCE, no PKCE, another resource, another scope.
	for name, q := range map[string]url.Values{
		"implicit":         {"response_type": {"token"}},
		"plain PKCE":       {"code_challenge_method": {"plain"}},
		"no PKCE":          {"code_challenge": {""}},
		"another resource": {"resource": {"https://other.example/mcp"}},
		"another scope":    {"scope": {"admin"}},
	} {
		u, _ := url.Parse(authorizeQuery(client, redirect, ch))
		v := u.Query()
		for k, x := range q {
			v[k] = x
		}
		resp, _ := a.do("GET", public.AuthorizePath+"?"+v.Encode(), "", "")
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusFound || loc.Query().Get("error") == "" || loc.Query().Get("code") != "" || loc.Query().Get("iss") != origin {
			t.Errorf("%s: %d %s", name, resp.StatusCode, loc)
		}
	}
	// Grants there are not.
	for _, g := range []string{"password", "client_credentials", "implicit", ""} {
		if st, m := a.form(public.TokenPath, url.Values{"grant_type": {g}, "username": {"u"}, "password": {"p"}, "client_id": {client}}); st != 400 || m["error"] != "unsupported_grant_type" {
			t.Errorf("grant %q: %d %v", g, st, m)
		}
	}
	// A code without its verifier, with a wrong one, for another client
	// or redirect: refused, and the code is gone with the first try.
	for name, v := range map[string]url.Values{
		"no verifier":      {"code_verifier": {""}},
		"wrong verifier":   {"code_verifier": {strings.Repeat("a", 50)}},
		"another client":   {"client_id": {a.register(redirect)}},
		"another redirect": {"redirect_uri": {redirect + "x"}},
	} {
		code := a.signIn(client, public.Approval{Approver: "owner", Rights: rights.All()})
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {client}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
		for k, x := range v {
			form[k] = x
		}
		st, m := a.form(public.TokenPath, form)
		if st != 400 || m["error"] != "invalid_grant" || strings.Contains(m["error_description"].(string), code) {
			t.Errorf("%s: %d %v", name, st, m)
		}
		form = url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {client}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
		if st, _ := a.form(public.TokenPath, form); st != 400 {
			t.Errorf("%s: the code still works after a failed try: %d", name, st)
		}
	}
	// Registration: no http redirect to another host, no secrets.
	for _, body := range []string{`{"redirect_uris":["http://evil.example/cb"]}`, `{"redirect_uris":[]}`, `{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`,
		`{"redirect_uris":["https://a.example/cb"],"grant_types":["password"]}`, `not json`} {
		if resp, b := a.do("POST", public.RegisterPath, "application/json", body); resp.StatusCode != 400 {
			t.Errorf("register %s: %d %s", body, resp.StatusCode, b)
		}
	}
	// Denied: the client hears access_denied.
	resp, page := a.do("GET", authorizeQuery(client, redirect, ch), "", "")
	uc, wait := codeRE.FindStringSubmatch(page), waitRE.FindStringSubmatch(page)
	if resp.StatusCode != 200 || uc == nil {
		t.Fatal(page)
	}
	if _, err := a.face.Deny(uc[1]); err != nil {
		t.Fatal(err)
	}
	resp, _ = a.do("GET", strings.ReplaceAll(wait[1], "&amp;", "&"), "", "")
	if loc, _ := url.Parse(resp.Header.Get("Location")); loc == nil || loc.Query().Get("error") != "access_denied" {
		t.Errorf("denied: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, err := a.face.Approve("BBBB-BBBB", public.Approval{}); err == nil {
		t.Error("an unknown code approved")
	}
}
