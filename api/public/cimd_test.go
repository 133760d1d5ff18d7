package public_test

import (
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
)

// docHost is a loopback HTTPS host of client metadata documents, which
// counts the fetches of each path.
type docHost struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

// docSecret is in every document the host serves: no answer of the face
// may carry it.
const docSecret = "D0C-C0NTENT-N3VER-ECH0ED"

func startDocHost(t *testing.T) *docHost {
	t.Helper()
	h := &docHost{hits: map[string]int{}}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.hits[r.URL.Path]++
		h.mu.Unlock()
		self := h.URL + r.URL.Path
		doc := map[string]any{"client_id": self, "client_name": "Doc App", "redirect_uris": []string{redirect},
			"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
			"response_types": []string{"code"}, "client_uri": "https://app.example/" + docSecret}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/good.json":
			w.Header().Set("Cache-Control", "public, max-age=600")
		case "/big.json":
			doc["logo_uri"] = "https://app.example/" + strings.Repeat("x", public.MaxCIMDSize)
		case "/other.json":
			doc["client_id"] = "https://app.example/client.json"
		case "/secret.json":
			doc["client_secret"] = docSecret
		case "/jwt.json":
			doc["token_endpoint_auth_method"] = "private_key_jwt"
		case "/html.json":
			w.Header().Set("Content-Type", "text/html")
		case "/moved.json":
			http.Redirect(w, r, "/good.json", http.StatusFound)
			return
		default:
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *docHost) count(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[path]
}

// newCIMDAS is an authorization server whose fetch may reach the doc
// host's loopback address (and only with allow).
func newCIMDAS(t *testing.T, h *docHost, allow bool, clients ...access.Client) *asTest {
	t.Helper()
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(h.Certificate())
	ft := public.FetchTest{RootCAs: pool}
	if allow {
		ft.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}
	f, err := public.New(public.Options{URL: origin, Tokens: st, Limit: public.Limit{Rate: 1000, Burst: 1000}, FetchTest: ft, Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &asTest{t: t, face: f, srv: srv, hc: hc, store: st}
}

// approveAndExchange runs an authorization of client up to its tokens;
// label is what the approver must be shown.
func (a *asTest) approveAndExchange(client, label string) map[string]any {
	a.t.Helper()
	resp, page := a.do("GET", authorizeQuery(client, redirect, challengeOf(verifier)), "", "")
	uc, wait := codeRE.FindStringSubmatch(page), waitRE.FindStringSubmatch(page)
	if resp.StatusCode != 200 || uc == nil || wait == nil || !strings.Contains(page, label) {
		a.t.Fatalf("authorize: %d %s", resp.StatusCode, page)
	}
	p, err := a.face.Approve(uc[1], public.Approval{Approver: "owner", Rights: rights.All()})
	if err != nil || p.ClientName != label || p.Client != client || p.RedirectHost != "app.example" {
		a.t.Fatalf("approve: %+v %v", p, err)
	}
	resp, _ = a.do("GET", strings.ReplaceAll(wait[1], "&amp;", "&"), "", "")
	loc, _ := url.Parse(resp.Header.Get("Location"))
	st, tok := a.form(public.TokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"client_id": {client}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
	if st != 200 || tok["access_token"] == nil {
		a.t.Fatalf("token: %d %v", st, tok)
	}
	return tok
}

// TestCIMDSignIn: a client identified by its metadata document's URL
// signs in; the approver sees its name and the host that vouches for it;
// its token is bound to that URL; the document is fetched once and kept
// by its Cache-Control.
func TestCIMDSignIn(t *testing.T) {
	t.Parallel()
	h := startDocHost(t)
	a := newCIMDAS(t, h, true)
	_, body := a.do("GET", public.ASMetadataPath, "", "")
	if !strings.Contains(body, `"client_id_metadata_document_supported":true`) {
		t.Fatalf("metadata: %s", body)
	}
	client := h.URL + "/good.json"
	host := strings.TrimPrefix(h.URL, "https://")
	tok := a.approveAndExchange(client, "Doc App ("+host+")")
	got, err := a.store.Check(tok["access_token"].(string))
	if err != nil || got.Client != client {
		t.Fatalf("token: %+v %v", got, err)
	}
	// A refresh is the same client's, by its URL.
	if st, m := a.form(public.TokenPath, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {client}}); st != 200 {
		t.Fatalf("refresh: %d %v", st, m)
	}
	a.approveAndExchange(client, "Doc App ("+host+")")
	if n := h.count("/good.json"); n != 1 {
		t.Errorf("the document was fetched %d times for two sign-ins within its max-age; want 1", n)
	}
}

// TestCIMDProbes: each is refused with an error page (never a redirect
// to the client) that says what is wrong and carries nothing of the
// document or the address it resolved to.
func TestCIMDProbes(t *testing.T) {
	t.Parallel()
	h := startDocHost(t)
	a := newCIMDAS(t, h, true)
	strict := newCIMDAS(t, h, false)
	ch := challengeOf(verifier)
	http0 := strings.Replace(h.URL, "https://", "http://", 1) + "/good.json"
	port := h.URL[strings.LastIndex(h.URL, ":"):]
	for _, tc := range []struct {
		name, client, redirect, want string
		as                           *asTest
	}{
		{"private address", "https://10.1.2.3/client.json", redirect, "not a public internet address", a},
		{"loopback by name, not allowed", "https://localhost" + port + "/good.json", redirect, "not a public internet address", strict},
		{"loopback, not allowed", h.URL + "/good.json", redirect, "not a public internet address", strict},
		{"IPv4-mapped loopback, not allowed", "https://[::ffff:127.0.0.1]" + port + "/good.json", redirect, "not a public internet address", strict},
		{"over the size cap", h.URL + "/big.json", redirect, "larger than 5120 bytes", a},
		{"client_id not its URL", h.URL + "/other.json", redirect, "another client_id than its own URL", a},
		{"a secret in the document", h.URL + "/secret.json", redirect, "holds a client_secret", a},
		{"a confidential client", h.URL + "/jwt.json", redirect, "other than none", a},
		{"not JSON", h.URL + "/html.json", redirect, "not served as application/json", a},
		{"a redirect", h.URL + "/moved.json", redirect, "redirect, which is not followed", a},
		{"not found", h.URL + "/none.json", redirect, "HTTP 404", a},
		{"redirect URI not in the document", h.URL + "/good.json", "https://app.example/other", "Redirect URI mismatch", a},
		{"http, not https", http0, redirect, "not the https URL of a client metadata document", a},
		{"no path", h.URL + "/", redirect, "has a path", a},
		{"a query", h.URL + "/good.json?x=1", redirect, "has no query", a},
		{"dot segments", h.URL + "/x/../good.json", redirect, "no . or .. path segments", a},
	} {
		resp, page := tc.as.do("GET", authorizeQuery(tc.client, tc.redirect, ch), "", "")
		if resp.StatusCode != 400 || resp.Header.Get("Location") != "" || !strings.Contains(page, tc.want) {
			t.Errorf("%s: %d %q\n%s", tc.name, resp.StatusCode, resp.Header.Get("Location"), page)
		}
		for _, leak := range []string{docSecret, "10.1.2.3", "127.0.0.1" + port, "x509", "dial tcp"} {
			if strings.Contains(page, leak) && !strings.Contains(tc.client, leak) {
				t.Errorf("%s: the page shows %q", tc.name, leak)
			}
		}
	}
	if n := h.count("/good.json"); n != 1 {
		t.Errorf("the good document was fetched %d times (the strict face and the http URL must fetch nothing; the redirect probe once); want 1", n)
	}
}

// TestPreRegisteredClient: a client of the config signs in by its id,
// with its redirect URIs only, and fetches nothing; a bad one is refused
// by New.
func TestPreRegisteredClient(t *testing.T) {
	t.Parallel()
	h := startDocHost(t)
	// Its id is a metadata document's URL: the config wins, and the
	// document is never fetched.
	c := access.Client{ID: h.URL + "/good.json", Name: "Configured", RedirectURIs: []string{redirect}}
	a := newCIMDAS(t, h, true, c, access.Client{ID: "my-cli", Name: "My CLI", RedirectURIs: []string{redirect}})
	a.approveAndExchange("my-cli", "My CLI")
	host := strings.TrimPrefix(h.URL, "https://")
	a.approveAndExchange(c.ID, "Configured ("+host+")")
	if n := h.count("/good.json"); n != 0 {
		t.Errorf("a pre-registered client's URL was fetched %d times", n)
	}
	if resp, _ := a.do("GET", authorizeQuery("my-cli", "https://app.example/other", challengeOf(verifier)), "", ""); resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
		t.Errorf("another redirect URI: %d", resp.StatusCode)
	}
	st, _ := access.Open(t.TempDir())
	for _, bad := range [][]access.Client{
		{{ID: "", RedirectURIs: []string{redirect}}},
		{{ID: "x"}},
		{{ID: "x", RedirectURIs: []string{"http://evil.example/cb"}}},
		{{ID: "x", RedirectURIs: []string{redirect}}, {ID: "x", RedirectURIs: []string{redirect}}},
	} {
		if _, err := public.New(public.Options{URL: origin, Tokens: st, Clients: bad}); err == nil {
			t.Errorf("New took the clients %+v", bad)
		}
	}
}
