package api_test

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/oidctest"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// TestPublicExternalIssuer: with an external issuer (a real oidc-provider
// issuing JWT access tokens with resource indicators), the public face
// names that issuer in its metadata, serves no authorization server of
// its own, admits a token for its resource with the rights its claims'
// grant gives (a real MCP client lists and calls those servers' tools
// only), takes a rotated key after one refetch of the keys and no more
// than one a minute, refuses 403 a valid token its grants give nothing,
// and refuses 401, echoing nothing, a token of another audience, an
// expired one, one signed by another key, alg none, an HMAC keyed with
// the issuer's public key, and another issuer's.
func TestPublicExternalIssuer(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is := oidctest.StartIssuers(t, []oidctest.IssuerClient{
		{ID: "alice-app", Claims: map[string]any{"groups": []string{"staff", "mcp-users"}, "email": "alice@example.com"}},
		{ID: "bob-app", Claims: map[string]any{"groups": []string{"staff"}}},
	})
	var skew atomic.Int64
	p := startPublicWith(t, func(o *public.Options) {
		o.Issuer = &public.IssuerOptions{URL: is.URL, Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) },
			Grants: []public.ClaimGrant{{Claim: "groups", Values: []string{"mcp-users"}, Rule: rights.Rule{Servers: []string{"demo"}}}}}
	})
	checkIssuerMetadata(t, p, is.URL)
	resource := publicOrigin + "/mcp"
	good := is.Token(t, is.URL, "alice-app", resource)
	checkIssuerRights(t, p, good)

	// A rotated key: one refetch of the keys admits its tokens; a second
	// rotation within the minute is not fetched, and its token refused.
	before := is.Fetches(t, is.URL)
	is.Rotate(t, is.URL)
	if r := p.mcpInit(t, "/mcp", is.Token(t, is.URL, "alice-app", resource)); r.StatusCode != http.StatusOK {
		t.Fatalf("a token of the rotated key: %d %s", r.StatusCode, r.Bytes)
	}
	if n := is.Fetches(t, is.URL); n != before+1 {
		t.Errorf("the rotation cost %d fetches of the keys, want 1", n-before)
	}
	if r := p.mcpInit(t, "/mcp", is.Token(t, is.URL, "bob-app", resource)); r.StatusCode != http.StatusForbidden ||
		r.Header.Get("WWW-Authenticate") != "" || !strings.Contains(string(r.Bytes), "no grant matches its groups") {
		t.Errorf("a valid token that grants nothing: %d %q %s, want 403 naming the claims", r.StatusCode, r.Header.Get("WWW-Authenticate"), r.Bytes)
	}
	probes := map[string]string{
		"another audience":            is.Token(t, is.URL, "alice-app", "https://elsewhere.example/mcp"),
		"another issuer":              is.Token(t, is.Other, "alice-app", resource),
		"signed by another key":       resign(t, good, false),
		"another key, unknown kid":    resign(t, good, true),
		"alg none":                    algNone(t, good),
		"HS256 keyed with public key": hmacWithPublicKey(t, p, is.URL, good),
	}
	// Signed by a key the face knows, all but the last: what refuses them
	// is what the probe is about.
	is.Rotate(t, is.URL)
	probes["a key rotated too soon"] = is.Token(t, is.URL, "alice-app", resource)
	before = is.Fetches(t, is.URL)
	for name, tok := range probes {
		checkRefused(t, p, name, tok)
	}
	if n := is.Fetches(t, is.URL); n != before {
		t.Errorf("unknown key ids fetched the keys %d times within the minute, want none", n-before)
	}
	skew.Store(int64(2 * time.Hour))
	checkRefused(t, p, "expired", good)
}

func (p *publicDaemon) mcpInit(t *testing.T, path, tok string) *apitest.Response {
	t.Helper()
	return p.do(t, "POST", path, initBody, append(mcpHeaders, "Authorization", "Bearer "+tok)...)
}

// checkIssuerMetadata: the metadata names the issuer; the embedded
// authorization server's paths are 404.
func checkIssuerMetadata(t *testing.T, p *publicDaemon, issuer string) {
	t.Helper()
	var doc struct {
		AS     []string `json:"authorization_servers"`
		Scopes []string `json:"scopes_supported"`
	}
	p.do(t, "GET", public.PRMPath+"/mcp", "").Decode(t, &doc)
	if len(doc.AS) != 1 || doc.AS[0] != issuer || doc.Scopes != nil {
		t.Errorf("metadata with an external issuer: %+v, want authorization_servers [%s] and no scopes", doc, issuer)
	}
	for _, path := range []string{public.ASMetadataPath, public.RegisterPath, public.AuthorizePath, public.TokenPath, public.RevokePath} {
		if r := p.do(t, "POST", path, ""); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s with an external issuer: %d, want 404", path, r.StatusCode)
		}
	}
	if ch := p.do(t, "POST", "/mcp", initBody, mcpHeaders...).Header.Get("WWW-Authenticate"); strings.Contains(ch, "scope=") || !strings.Contains(ch, "resource_metadata=") {
		t.Errorf("challenge with an external issuer: %q", ch)
	}
}

// checkIssuerRights: a real MCP client with the token sees the granted
// server's tools only, and calls one.
func checkIssuerRights(t *testing.T, p *publicDaemon, tok string) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "issuer-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: p.base + "/mcp", HTTPClient: &http.Client{Transport: apitest.Bearer{Token: tok}}, MaxRetries: -1}
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("an external issuer's token: %v", err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if !strings.HasPrefix(tl.Name, "demo__") {
			t.Errorf("tool %s of a server no grant names is listed", tl.Name)
		}
	}
	if got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"message": "via idp"}}); got != "via idp" {
		t.Errorf("demo__echo = %q", got)
	}
}

func checkRefused(t *testing.T, p *publicDaemon, name, tok string) {
	t.Helper()
	r := p.mcpInit(t, "/mcp", tok)
	body, ch := string(r.Bytes), r.Header.Get("WWW-Authenticate")
	switch {
	case r.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, `error="invalid_token"`):
		t.Errorf("%s: %d %q %s, want 401 invalid_token", name, r.StatusCode, ch, body)
	case strings.Contains(body+ch, tok) || strings.Contains(body+ch, strings.Split(tok, ".")[1]):
		t.Errorf("%s: the answer echoes the token", name)
	}
	for _, leak := range []string{"keyfunc", "rsa", "jwk", "kid", "crypto", "signature"} {
		if strings.Contains(strings.ToLower(body+ch), leak) {
			t.Errorf("%s: the answer says %q: %s %s", name, leak, ch, body)
		}
	}
}

// resign signs tok's header and claims with a key of the test's own, under
// the issuer's key id or a new one.
func resign(t *testing.T, tok string, newKid bool) string {
	t.Helper()
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forged := jwt.NewWithClaims(jwt.SigningMethodRS256, parsed.Claims)
	forged.Header["kid"] = parsed.Header["kid"]
	if newKid {
		forged.Header["kid"] = "forged-" + rand.Text()
	}
	s, err := forged.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// algNone is tok's claims under alg none, unsigned.
func algNone(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	return b64(t, map[string]any{"alg": "none", "typ": "at+jwt"}) + "." + parts[1] + "."
}

// hmacWithPublicKey is tok's claims signed HS256 with the issuer's public
// key (its JWKS document's first key, as the verifier would read it): the
// confusion attack on verifiers that let the token choose the algorithm.
func hmacWithPublicKey(t *testing.T, p *publicDaemon, issuer, tok string) string {
	t.Helper()
	resp, err := http.Get(issuer + "/jwks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var jwks struct{ Keys []json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&jwks); err != nil || len(jwks.Keys) == 0 {
		t.Fatalf("the issuer's keys: %v", err)
	}
	parts := strings.Split(tok, ".")
	head := b64(t, map[string]any{"alg": "HS256", "typ": "at+jwt"})
	mac := hmac.New(sha256.New, jwks.Keys[0])
	mac.Write([]byte(head + "." + parts[1]))
	return head + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func b64(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
