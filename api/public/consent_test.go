package public_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
)

var consentRE = regexp.MustCompile(`id="consent" href="([^"]+)"`)

// consentID opens an authorization page and returns the consent id its
// link carries.
func (a *asTest) consentID(client string) string {
	a.t.Helper()
	resp, page := a.do("GET", authorizeQuery(client, redirect, challengeOf(verifier)), "", "")
	m := consentRE.FindStringSubmatch(page)
	if resp.StatusCode != 200 || m == nil {
		a.t.Fatalf("authorization page without a consent link: %d %s", resp.StatusCode, page)
	}
	u, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil || u.Scheme+"://"+u.Host+u.Path != "http://broker.tail.ts.net"+public.ConsentPath {
		a.t.Fatalf("consent link %q", m[1])
	}
	return u.Query().Get("id")
}

// TestConsentFormsAreSingleUse: the authorization page links to the
// tailnet consent page only once one is set; a consent form's CSRF token
// is bound to its authorization and to the identity it was shown to, and
// is spent at its first use, good or bad; a decided authorization takes no
// second consent; the browser goes back to the page that polls, which
// sends it to the client with a code; the token records the approver.
func TestConsentFormsAreSingleUse(t *testing.T) {
	t.Parallel()
	a := newAS(t)
	client := a.register(redirect)
	if _, page := a.do("GET", authorizeQuery(client, redirect, challengeOf(verifier)), "", ""); strings.Contains(page, `id="consent"`) {
		t.Fatalf("a consent link with no consent page set:\n%s", page)
	}
	a.face.SetConsentPage("http://broker.tail.ts.net" + public.ConsentPath)
	cid := a.consentID(client)
	if _, _, err := a.face.ConsentRequest(cid+"x", "alice@example.com"); !errors.Is(err, public.ErrNoConsent) {
		t.Errorf("a consent id off by a character: %v, want ErrNoConsent", err)
	}
	p, csrf, err := a.face.ConsentRequest(cid, "alice@example.com")
	if err != nil || p.ClientName != "Test App" || p.RedirectHost != "app.example" || len(csrf) < 40 {
		t.Fatalf("consent request: %+v %q %v", p, csrf, err)
	}
	approve := func() (*public.Approval, error) {
		return &public.Approval{Approver: "alice@example.com", Node: "100.64.0.9", Rights: rights.Rights{{Servers: []string{"demo"}}}}, nil
	}
	chose := false
	probe := func(name, cid, who, token string) {
		t.Helper()
		_, _, err := a.face.Consent(cid, who, token, func() (*public.Approval, error) { chose = true; return approve() })
		if !errors.Is(err, public.ErrCSRF) || chose || strings.Contains(err.Error(), token) && token != "" {
			t.Errorf("%s: %v (chosen: %v), want ErrCSRF before any choice, naming no token", name, err, chose)
		}
	}
	probe("no CSRF token", cid, "alice@example.com", "")
	probe("a wrong CSRF token", cid, "alice@example.com", csrf[:len(csrf)-2]+"AA")
	_, csrf2, _ := a.face.ConsentRequest(cid, "alice@example.com")
	probe("another identity's form", cid, "bob@example.com", csrf2)
	probe("the form replayed after a refused use", cid, "alice@example.com", csrf2)
	_, csrf3, _ := a.face.ConsentRequest(cid, "alice@example.com")
	if _, _, err := a.face.Consent(cid, "alice@example.com", csrf3, func() (*public.Approval, error) { return nil, errors.New("outside the grant") }); err == nil {
		t.Fatal("a refused choice decided the authorization")
	}
	probe("the form replayed after a refused choice", cid, "alice@example.com", csrf3)

	_, csrf4, _ := a.face.ConsentRequest(cid, "alice@example.com")
	_, csrf5, _ := a.face.ConsentRequest(cid, "alice@example.com")
	p, back, err := a.face.Consent(cid, "alice@example.com", csrf4, approve)
	if err != nil || p.ClientName != "Test App" || !strings.HasPrefix(back, origin+"/authorize/wait?id=") {
		t.Fatalf("consent: %+v %q %v", p, back, err)
	}
	probe("the same form again", cid, "alice@example.com", csrf4)
	if _, _, err := a.face.Consent(cid, "alice@example.com", csrf5, approve); !errors.Is(err, public.ErrNoConsent) {
		t.Errorf("a second consent to a decided authorization: %v, want ErrNoConsent", err)
	}
	if _, _, err := a.face.ConsentRequest(cid, "alice@example.com"); !errors.Is(err, public.ErrNoConsent) {
		t.Errorf("a consent form for a decided authorization: %v, want ErrNoConsent", err)
	}
	resp, _ := a.do("GET", strings.TrimPrefix(back, origin), "", "")
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Query().Get("code") == "" {
		t.Fatalf("back at the authorization page: %d %s", resp.StatusCode, loc)
	}
	status, tok := a.form(public.TokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"client_id": {client}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
	if status != 200 {
		t.Fatalf("token: %d %v", status, tok)
	}
	ls := a.store.List()
	if len(ls) != 2 || ls[0].Approver != "alice@example.com" || ls[0].ApproverNode != "100.64.0.9" {
		t.Errorf("tokens: %+v, want a pair approved by alice at 100.64.0.9", ls)
	}
}

// TestApproverCheckedAtUse: a token a tailnet identity approved is checked
// at each use and at refresh: refused without a check, refused (and kept)
// when the tailnet cannot tell, revoked with its sign-in once the check
// says the approver's grant no longer covers it; the owner's are never
// checked.
func TestApproverCheckedAtUse(t *testing.T) {
	t.Parallel()
	a := newAS(t)
	client := a.register(redirect)
	exchange := func(ap public.Approval) map[string]any {
		t.Helper()
		code := a.signIn(client, ap)
		status, tok := a.form(public.TokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"client_id": {client}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
		if status != 200 {
			t.Fatalf("token: %d %v", status, tok)
		}
		return tok
	}
	use := func(tok map[string]any) error {
		req, _ := http.NewRequest("POST", origin+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+tok["access_token"].(string))
		_, err := a.face.Authenticate(req, "")
		return err
	}
	owners := exchange(public.Approval{Approver: "owner", Rights: rights.All()})
	alices := exchange(public.Approval{Approver: "alice@example.com", Node: "100.64.0.9", Rights: rights.Rights{{Servers: []string{"demo"}}}})
	if err := use(alices); err == nil {
		t.Error("a tailnet approver's token admitted with no way to check the approver")
	}
	var answer error
	var asked []string
	a.face.SetApproverCheck(func(_ context.Context, tok access.Token) error {
		asked = append(asked, tok.Approver+"@"+tok.ApproverNode)
		return answer
	})
	if err := use(alices); err != nil {
		t.Fatalf("alice's token while her grant covers it: %v", err)
	}
	answer = errors.New("the tailnet node is not up")
	if err := use(alices); err == nil || !strings.Contains(err.Error(), "cannot be checked") {
		t.Errorf("alice's token while the tailnet cannot tell: %v, want refused", err)
	}
	if status, m := a.form(public.TokenPath, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {alices["refresh_token"].(string)}, "client_id": {client}}); status != 400 || m["error"] != "server_error" {
		t.Errorf("refreshing while the tailnet cannot tell: %d %v, want server_error (the sign-in kept)", status, m)
	}
	answer = nil
	if err := use(alices); err != nil {
		t.Fatalf("alice's token once the tailnet answers again: %v", err)
	}
	answer = public.ErrApproverGone
	if status, m := a.form(public.TokenPath, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {alices["refresh_token"].(string)}, "client_id": {client}}); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("refreshing once alice's grant is gone: %d %v, want invalid_grant", status, m)
	}
	answer = nil // the sign-in is revoked for good: a grant given back does not revive it
	if err := use(alices); err == nil {
		t.Error("alice's token admitted after her grant went")
	}
	if err := use(owners); err != nil {
		t.Errorf("the owner's token: %v", err)
	}
	for _, who := range asked {
		if who != "alice@example.com@100.64.0.9" {
			t.Errorf("the check was asked about %s", who)
		}
	}
	for _, tk := range a.store.List() {
		if tk.Approver != "owner" {
			t.Errorf("token %s of %s outlived its approver's grant", tk.ID, tk.Approver)
		}
	}
}

// TestConsentFormsBounded: consent forms open at once are bounded; one
// beyond the bound makes the oldest stale, not the newest impossible.
func TestConsentFormsBounded(t *testing.T) {
	t.Parallel()
	a := newAS(t)
	a.face.SetConsentPage("http://broker.tail.ts.net" + public.ConsentPath)
	cid := a.consentID(a.register(redirect))
	var tokens []string
	for range 300 {
		_, tok, err := a.face.ConsentRequest(cid, "alice@example.com")
		if err != nil {
			t.Fatalf("form %d: %v", len(tokens), err)
		}
		tokens = append(tokens, tok)
	}
	noop := func() (*public.Approval, error) { return nil, errors.New("not deciding") }
	if _, _, err := a.face.Consent(cid, "alice@example.com", tokens[0], noop); !errors.Is(err, public.ErrCSRF) {
		t.Errorf("the oldest form beyond the bound: %v, want ErrCSRF", err)
	}
	if _, _, err := a.face.Consent(cid, "alice@example.com", tokens[len(tokens)-1], noop); err == nil || errors.Is(err, public.ErrCSRF) {
		t.Errorf("the newest form: %v, want it taken (and the choice's own error)", err)
	}
}
