package api_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// testClock is a settable clock for the issuer.
type testClock struct {
	mu sync.Mutex
	d  time.Duration // added to the wall clock
}

func (c *testClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.d) }
func (c *testClock) set(d time.Duration) { c.mu.Lock(); c.d = d; c.mu.Unlock() }

// bearerClient is a TCP client that sends tok (if any) and Mcpx-Client.
func bearerClient(d *apitest.Daemon, tok string) *apitest.Client {
	return &apitest.Client{Base: d.TCP.Base, HTTP: &http.Client{Transport: headerTransport{tok}}}
}

type headerTransport struct{ token string }

func (ht headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if ht.token != "" {
		r.Header.Set("Authorization", "Bearer "+ht.token)
	}
	r.Header.Set(wire.HeaderClient, "api-test")
	return http.DefaultTransport.RoundTrip(r)
}

// TestSignedTokensOverTCP: a signed token is accepted on loopback TCP with
// exactly its narrower rights, next to the owner's token; every bad token
// is a 401 problem that says nothing about keys; revoke and rotate work
// through the routes.
func TestSignedTokensOverTCP(t *testing.T) {
	proctest.CheckNoLeaks(t)
	stateDir := t.TempDir()
	clk := &testClock{}
	is, err := auth.Open(auth.Options{Dir: stateDir, Hostname: "box", Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`, "billing": `{"scope": "global"}`}), Tokens: is})
	root, _ := filepath.EvalSymlinks(t.TempDir())
	inside := filepath.Join(root, "proj")
	os.Mkdir(inside, 0o755)
	outside, _ := filepath.EvalSymlinks(t.TempDir())

	m := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "ci", Rule: rights.Rule{Servers: []string{"demo"}, Roots: []string{root}, Scopes: []string{"cwd"}}, TTL: "1h"})
	if m.Info.Subject != "ci" || m.Info.Revoked || m.Info.ExpiresAt.Sub(m.Info.IssuedAt) != time.Hour {
		t.Errorf("minted %+v", m.Info)
	}
	ci := bearerClient(d, m.Token)

	var w wire.Whoami
	ci.Do(t, "GET", "/v1/whoami", "").Decode(t, &w)
	if w.Caller.Name != "ci" || w.Caller.Via != wire.ViaJWT || w.Caller.Owner || w.Caller.Admin || w.Caller.Local ||
		!reflect.DeepEqual(w.Caller.Rights, rights.Rights{{Servers: []string{"demo"}, Roots: []string{root}, Scopes: []string{"cwd"}}}) || w.Daemon != nil {
		t.Errorf("whoami with the token: %+v", w.Caller)
	}
	var sl wire.ServerList
	ci.Do(t, "GET", "/v1/servers", "").Decode(t, &sl)
	if len(sl.Servers) != 1 || sl.Servers[0].Name != "demo" {
		t.Errorf("servers with the token: %+v, want demo alone", sl.Servers)
	}
	if got := ci.Do(t, "POST", "/v1/servers/demo/tools/cwd", `{}`, cwdHeader(inside)...).Result(t).Text(); got != inside {
		t.Errorf("cwd inside the token's root: %q", got)
	}
	for _, tc := range []struct {
		what, method, path, cwd string
		status                  int
	}{
		{"a cwd outside its roots", "POST", "/v1/servers/demo/tools/cwd", outside, 403},
		{"a server it was not given: to it, none such", "POST", "/v1/servers/billing/tools/echo", "", 404},
		{"the token list", "GET", "/v1/tokens", "", 403},
		{"minting", "POST", "/v1/tokens", "", 403},
		{"rotating", "POST", "/v1/tokens/rotate", "", 403},
		{"stopping the daemon", "POST", "/v1/daemon/stop", "", 403},
	} {
		var h []string
		if tc.cwd != "" {
			h = cwdHeader(tc.cwd)
		}
		if r := ci.Do(t, tc.method, tc.path, `{"sub":"x","servers":["*"]}`, h...); r.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.what, r.StatusCode, r.Bytes, tc.status)
		}
	}
	// The owner's token keeps working on TCP, with full rights.
	var ow wire.Whoami
	d.TCP.Do(t, "GET", "/v1/whoami", "").Decode(t, &ow)
	if !ow.Caller.Owner || !ow.Caller.Admin || ow.Caller.Via != wire.ViaTCPLoopback {
		t.Errorf("whoami with the owner's token: %+v", ow.Caller)
	}

	// Bad requests name what is wrong.
	for body, want := range map[string]string{
		`{"sub":"x","servers":["demo"],"roots":["src"]}`:    "not an absolute path",
		`{"sub":"x","servers":["demo"],"ttl":"-1h"}`:        "not a positive duration",
		`{"sub":"x","servers":["demo"],"ttl":"9999h"}`:      "out of range",
		`{"sub":"x","servers":["demo"],"scopes":["repos"]}`: `unknown scope "repos"`,
		`{"servers":["demo"]}`:                              "needs a subject",
		`{"sub":"x","server":["demo"]}`:                     "not a token request",
	} {
		r := d.Unix.Do(t, "POST", "/v1/tokens", body)
		if p := r.Problem(t); p.Status != 400 || !strings.Contains(p.Detail, want) {
			t.Errorf("mint %s: %+v, want 400 saying %q", body, p, want)
		}
	}

	// An admin token mints no more than its own rights.
	adm := bearerClient(d, apitest.Mint(t, d.TCP, wire.TokenRequest{Subject: "ops", Rule: rights.Rule{Servers: []string{"demo"}, Roots: []string{root}, Admin: true}}).Token)
	if r := adm.Do(t, "POST", "/v1/tokens", `{"sub":"more","servers":["*"]}`); r.StatusCode != 403 || !strings.Contains(string(r.Bytes), "only rights its minter has") {
		t.Errorf("admin token minting more than its rights: %d %s", r.StatusCode, r.Bytes)
	}
	if r := adm.Do(t, "POST", "/v1/tokens", fmt.Sprintf(`{"sub":"less","servers":["demo"],"roots":[%q]}`, inside)); r.StatusCode != 200 {
		t.Errorf("admin token minting within its rights: %d %s", r.StatusCode, r.Bytes)
	}

	// Bad tokens, forged with the real key where that matters.
	keys := readKeys(t, stateDir)
	priv := keys[m.Info.KeyID]
	id := is.Identity()
	claims := func(mod func(*auth.Claims)) *auth.Claims {
		now := time.Now()
		c := &auth.Claims{RegisteredClaims: jwt.RegisteredClaims{ID: m.Info.ID, Subject: "ci", Issuer: id, Audience: jwt.ClaimStrings{id},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
			Rights: rights.Rights{{Servers: []string{"*"}, Roots: []string{"/"}}}}
		if mod != nil {
			mod(c)
		}
		return c
	}
	sign := func(m jwt.SigningMethod, c jwt.Claims, kid string, key any) string {
		tok := jwt.NewWithClaims(m, c)
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	clk.set(-48 * time.Hour)
	expired := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "old", Rule: rights.Rule{Servers: []string{"demo"}}, TTL: "1h"}).Token
	clk.set(30 * time.Minute) // not an hour: m (1h) would have expired, and left the ledger
	early := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "early", Rule: rights.Rule{Servers: []string{"demo"}}, TTL: "2h"}).Token
	clk.set(0)
	revoked := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "gone", Rule: rights.Rule{Servers: []string{"demo"}}})
	if r := d.Unix.Do(t, "DELETE", "/v1/tokens/"+revoked.Info.ID, ""); r.StatusCode != 200 {
		t.Fatalf("revoke: %d %s", r.StatusCode, r.Bytes)
	}
	parts := strings.Split(m.Token, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"demo"`, `"*"`, 1))) + "." + parts[2]
	for _, tc := range []struct{ name, tok, detail string }{
		{"expired", expired, "expired"},
		{"not yet valid", early, "not valid yet"},
		{"wrong audience", sign(jwt.SigningMethodEdDSA, claims(func(c *auth.Claims) { c.Audience = jwt.ClaimStrings{"mcpx:elsewhere/1"} }), m.Info.KeyID, priv), "another broker"},
		{"wrong issuer", sign(jwt.SigningMethodEdDSA, claims(func(c *auth.Claims) { c.Issuer = "mcpx:elsewhere/1" }), m.Info.KeyID, priv), "another broker"},
		{"unknown kid", sign(jwt.SigningMethodEdDSA, claims(nil), "0123456789abcdef", priv), "not a valid token"},
		{"alg none", sign(jwt.SigningMethodNone, claims(nil), m.Info.KeyID, jwt.UnsafeAllowNoneSignatureType), "not a valid token"},
		{"HS256 with the public key", sign(jwt.SigningMethodHS256, claims(nil), m.Info.KeyID, []byte(priv.Public().(ed25519.PublicKey))), "not a valid token"},
		{"tampered payload", tampered, "not a valid token"},
		{"revoked jti", revoked.Token, "revoked"},
	} {
		for _, path := range []string{"/v1/whoami", "/v1/servers"} {
			r := bearerClient(d, tc.tok).Do(t, "GET", path, "")
			p := r.Problem(t)
			if p.Status != 401 || p.Kind() != wire.KindUnauthorized || !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("%s, %s: %d %+v, want 401 saying %q", tc.name, path, r.StatusCode, p, tc.detail)
			}
			for kid := range keys {
				if strings.Contains(string(r.Bytes), kid) || strings.Contains(strings.ToLower(p.Detail), "key") {
					t.Errorf("%s: the answer %s talks about keys", tc.name, r.Bytes)
				}
			}
			if r.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: no WWW-Authenticate", tc.name)
			}
		}
	}

	// Rotate: the old token keeps working; new tokens use the new key.
	var k wire.TokenKey
	d.Unix.Do(t, "POST", "/v1/tokens/rotate", "").Decode(t, &k)
	if !k.Current || k.ID == m.Info.KeyID {
		t.Fatalf("rotate: %+v", k)
	}
	if r := ci.Do(t, "GET", "/v1/whoami", ""); r.StatusCode != 200 {
		t.Errorf("a token of the old key after rotate: %d %s", r.StatusCode, r.Bytes)
	}
	if m2 := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "new", Rule: rights.Rule{Servers: []string{"demo"}}}); m2.Info.KeyID != k.ID {
		t.Errorf("minted after rotate with %s, want %s", m2.Info.KeyID, k.ID)
	}
	var ls wire.TokenList
	d.Unix.Do(t, "GET", "/v1/tokens", "").Decode(t, &ls)
	if ls.Identity != id || len(ls.Keys) != 2 || !slices.ContainsFunc(ls.Tokens, func(t wire.Token) bool { return t.ID == revoked.Info.ID && t.Revoked }) {
		t.Errorf("token list %+v, want both keys and the revoked token", ls)
	}
	for _, k := range ls.Keys {
		if !k.Current && k.RetiresAfter.Before(m.Info.ExpiresAt) {
			t.Errorf("old key %+v retires before its token %s expires (%v)", k, m.Info.ID, m.Info.ExpiresAt)
		}
	}
}

func readKeys(t *testing.T, dir string) map[string]ed25519.PrivateKey {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, auth.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Keys []struct {
			ID   string `json:"kid"`
			Seed []byte `json:"seed"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]ed25519.PrivateKey{}
	for _, k := range st.Keys {
		out[k.ID] = ed25519.NewKeyFromSeed(k.Seed)
	}
	return out
}

// TestNoRouteButHealthzAnswersWithoutIdentity walks every route of the
// table over loopback TCP: without a token only /healthz answers (and
// /v1/auth/redirect, a browser back from signing in, whose unknown state
// is a 400); with an Origin header, or without Mcpx-Client (but a
// Prometheus server's GETs of /metrics and /v1/fleet/sd, and that
// browser's navigation), the browser guard refuses first;
// and no answer ever carries an Access-Control-* header (CORS stays shut).
func TestNoRouteButHealthzAnswersWithoutIdentity(t *testing.T) {
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Tokens: is})
	plain := &apitest.Client{Base: d.TCP.Base, HTTP: &http.Client{}}
	for _, rt := range wire.Routes() {
		var params []string
		for range strings.Count(rt.Pattern, "{") {
			params = append(params, "x")
		}
		path := rt.Path(params...)
		for _, query := range rt.Query {
			path += "?" + query + "=x"
		}
		healthz := rt.Name == wire.OpHealthz
		// A Prometheus server sends no Mcpx-Client: its GETs need identity only.
		scrape := rt.Name == wire.OpMetrics || rt.Name == wire.OpFleetSD
		redirect := rt.Name == wire.OpAuthRedirect
		for _, tc := range []struct {
			name    string
			headers []string
			status  int
		}{
			{"no token", []string{wire.HeaderClient, "t"}, 401},
			{"Origin", []string{wire.HeaderClient, "t", "Origin", "http://localhost:1234", "Authorization", "Bearer " + apitest.Token}, 403},
			{"no Mcpx-Client", []string{"Authorization", "Bearer " + apitest.Token}, 403},
			{"preflight-style", []string{"Access-Control-Request-Method", rt.Method}, 403},
		} {
			want := tc.status
			switch {
			case healthz && tc.name != "Origin":
				want = 200
			case redirect && tc.name != "Origin":
				want = 400
			case scrape && tc.name == "no Mcpx-Client":
				want = 200
			case scrape && tc.name == "preflight-style":
				want = 401
			}
			r := plain.Do(t, rt.Method, path, "", tc.headers...)
			if r.StatusCode != want {
				t.Errorf("%s %s, %s: %d %s, want %d", rt.Method, path, tc.name, r.StatusCode, r.Bytes, want)
			}
			if want != 200 {
				if p := r.Problem(t); !strings.HasPrefix(p.Type, wire.ProblemTypeBase) {
					t.Errorf("%s %s, %s: problem type %q", rt.Method, path, tc.name, p.Type)
				}
			}
			for h := range r.Header {
				if strings.HasPrefix(h, "Access-Control-") {
					t.Errorf("%s %s, %s: answered with %s", rt.Method, path, tc.name, h)
				}
			}
		}
	}
	// And an OPTIONS preflight gets no CORS answer either.
	r := plain.Do(t, "OPTIONS", "/v1/servers", "", "Origin", "http://evil.example", "Access-Control-Request-Method", "GET",
		"Access-Control-Request-Headers", wire.HeaderClient)
	if r.StatusCode != 403 || r.Header.Get("Access-Control-Allow-Origin") != "" || r.Header.Get("Access-Control-Allow-Headers") != "" {
		t.Errorf("preflight: %d %v", r.StatusCode, r.Header)
	}
}
