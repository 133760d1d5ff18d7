package oidctest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/testenv"
)

// Issuers are two external OAuth issuers (testdata/issuer.mjs): real
// oidc-provider instances, each with its own RSA key, issuing JWT access
// tokens with resource indicators to confidential clients by the client
// credentials grant, each client's claims in its tokens.
//
//	is := oidctest.StartIssuers(t, []oidctest.IssuerClient{{ID: "alice-app", Claims: map[string]any{"groups": []string{"mcp"}}}})
//	tok := is.Token(t, is.URL, "alice-app", "https://mcpx.example/mcp") // aud = the resource
//	is.Rotate(t, is.URL)                                              // a new signing key
type Issuers struct {
	URL   string // the main issuer
	Other string // another issuer, with another key

	secrets map[string]string
}

// IssuerClient is a client both issuers know.
type IssuerClient struct {
	ID     string
	Claims map[string]any // put in its access tokens
}

// StartIssuers starts the issuers; t's cleanup stops them. Call
// proctest.CheckNoLeaks(t) first.
func StartIssuers(t testing.TB, clients []IssuerClient) *Issuers {
	t.Helper()
	pw := filepath.Dir(testenv.NPMPackageBin(t, "playwright-core"))
	modules := filepath.Dir(pw)
	if err := checkPinned(filepath.Join(modules, "oidc-provider"), filepath.Join(filepath.Dir(modules), "package-lock.json")); err != nil {
		t.Fatalf("oidctest: %v (npm ci --prefix testdata/npm)", err)
	}
	h := &Harness{dir: filepath.Join(testenv.RepoRoot(t), "internal", "testing", "oidctest", "testdata"), node: testenv.Node(t)}
	is := &Issuers{secrets: map[string]string{}}
	type client struct {
		ID     string         `json:"id"`
		Secret string         `json:"secret"`
		Claims map[string]any `json:"claims,omitempty"`
	}
	var cs []client
	for _, c := range clients {
		is.secrets[c.ID] = "secret-of-" + c.ID + "-0123456789abcdef0123456789"
		cs = append(cs, client{c.ID, is.secrets[c.ID], c.Claims})
	}
	b, _ := json.Marshal(cs)
	p := h.start(t, []string{"issuer.mjs"}, "ISSUERS", []string{"NODE_MODULES=" + modules, "CLIENTS=" + string(b)})
	is.URL, is.Other, _ = strings.Cut(p.wait(t), " ")
	return is
}

// Token is an access token of issuer for client, bound to resource.
func (is *Issuers) Token(t testing.TB, issuer, client, resource string) string {
	t.Helper()
	resp, err := http.PostForm(issuer+"/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {client},
		"client_secret": {is.secrets[client]}, "resource": {resource}, "scope": {"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Desc        string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.AccessToken == "" {
		t.Fatalf("oidctest: a token of %s for %s: %v %s %s", issuer, client, err, out.Error, out.Desc)
	}
	return out.AccessToken
}

// Rotate gives issuer a new signing key, published beside the old one,
// and returns its key id.
func (is *Issuers) Rotate(t testing.TB, issuer string) string {
	t.Helper()
	resp, err := http.Post(issuer+"/test/rotate", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Kid string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Kid
}

// Fetches is how many times issuer's JWKS was fetched.
func (is *Issuers) Fetches(t testing.TB, issuer string) int {
	t.Helper()
	var out struct{ Fetches int }
	(&Harness{}).get(t, issuer+"/test/fetches", &out)
	return out.Fetches
}
