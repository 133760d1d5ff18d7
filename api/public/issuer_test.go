package public_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
)

// idp is an issuer served by httptest, with one ES256 key: the edge of
// what a unit test can fake (the real provider is oidc-provider, in
// api/publicissuer_test.go). metaIssuer is what its metadata calls it.
type idp struct {
	srv        *httptest.Server
	key        *ecdsa.PrivateKey
	metaIssuer string
}

func newIdP(t testing.TB, lie bool) *idp {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	d := &idp{key: key}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]string{"issuer": d.metaIssuer, "jwks_uri": d.srv.URL + "/jwks"})
		case "/jwks":
			b := func(n []byte) string { return base64.RawURLEncoding.EncodeToString(n) }
			pt, _ := key.PublicKey.Bytes() // 0x04 || X || Y
			x, y := pt[1:33], pt[33:]
			json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig", "x": b(x), "y": b(y)}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(d.srv.Close)
	d.metaIssuer = d.srv.URL
	if lie {
		d.metaIssuer = "https://evil.example"
	}
	return d
}

func (d *idp) sign(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(d.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func issuerFace(t testing.TB, d *idp) *public.Face {
	t.Helper()
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := public.New(public.Options{URL: origin, Tokens: st, Limit: public.Limit{Rate: 1e9, Burst: 1 << 30},
		Issuer: &public.IssuerOptions{URL: d.srv.URL, Grants: []public.ClaimGrant{{Claim: "sub", Values: []string{"alice"}, Rule: rights.Rule{Servers: []string{"notes"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func authenticate(f *public.Face, server, tok string) (access.Token, error) {
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	return f.Authenticate(r, server)
}

// TestIssuerMetadataMustNameIt: metadata that calls the issuer something
// else is not trusted (RFC 8414 §3.3): its tokens are refused 503, not
// admitted, and the issuer is not asked again at once.
func TestIssuerMetadataMustNameIt(t *testing.T) {
	t.Parallel()
	d := newIdP(t, true)
	f := issuerFace(t, d)
	tok := d.sign(t, jwt.MapClaims{"iss": d.srv.URL, "aud": origin + "/mcp", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	_, err := authenticate(f, "", tok)
	var rf *public.Refusal
	if !errorsAs(err, &rf) || rf.Status != http.StatusServiceUnavailable || strings.Contains(rf.Msg, "evil") {
		t.Fatalf("a token of an issuer whose metadata names another: %v", err)
	}
}

// TestIssuerTokenOfAServer: a token of /mcp/<server> serves that server
// only; one of /mcp serves every server its grants name; the grant's
// rule is read as granted (absent roots: no cwd).
func TestIssuerTokenOfAServer(t *testing.T) {
	t.Parallel()
	d := newIdP(t, false)
	f := issuerFace(t, d)
	claims := func(aud string) jwt.MapClaims {
		return jwt.MapClaims{"iss": d.srv.URL, "aud": aud, "sub": "alice", "client_id": "app", "exp": time.Now().Add(time.Hour).Unix()}
	}
	notes := d.sign(t, claims(origin+"/mcp/notes"))
	if tok, err := authenticate(f, "notes", notes); err != nil || tok.Client != "app" || tok.Approver != "alice" ||
		!tok.Rights.MayUse("notes") || tok.Rights.MayUseDir("/") {
		t.Errorf("a token of /mcp/notes on /mcp/notes: %+v, %v", tok, err)
	}
	if _, err := authenticate(f, "", notes); err == nil {
		t.Error("a token of /mcp/notes admitted on /mcp")
	}
	if _, err := authenticate(f, "notes", d.sign(t, claims(origin+"/mcp"))); err != nil {
		t.Errorf("a token of /mcp on /mcp/notes: %v", err)
	}
}

// FuzzIssuerToken: whatever bearer a caller sends, the face answers
// without a panic and admits nothing but the one token the issuer
// signed.
func FuzzIssuerToken(f *testing.F) {
	d := newIdP(f, false)
	face := issuerFace(f, d)
	good := d.sign(f, jwt.MapClaims{"iss": d.srv.URL, "aud": origin + "/mcp", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	parts := strings.Split(good, ".")
	f.Add(good)
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add("eyJhbGciOiJub25lIn0." + parts[1] + ".")
	f.Add(parts[0] + "." + parts[1] + "." + parts[2][:10])
	f.Add("a.b.c")
	f.Add("..")
	f.Fuzz(func(t *testing.T, bearer string) {
		tok, err := authenticate(face, "", bearer)
		if err == nil && bearer != good {
			t.Fatalf("admitted %q as %+v", bearer, tok)
		}
	})
}
