package auth_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func open(t *testing.T, dir string, c *clock) *auth.Issuer {
	t.Helper()
	is, err := auth.Open(auth.Options{Dir: dir, Hostname: "box", Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return is
}

// stateKeys reads the signing keys back from the state file, as an
// attacker who could read it would; the tests forge tokens with them.
func stateKeys(t *testing.T, dir string) map[string]ed25519.PrivateKey {
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

func sign(t *testing.T, m jwt.SigningMethod, claims jwt.Claims, kid string, key any) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVerifyRefusesEveryBadToken mints a real token, then checks each way
// a token can be wrong against the error Verify must give.
func TestVerifyRefusesEveryBadToken(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	is := open(t, dir, c)
	good, info, err := is.Mint(auth.Grant{Subject: "ci", Rights: rights.Rights{{Servers: []string{"demo"}, Roots: []string{"/srv/src"}, Scopes: []string{"session"}}}, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := is.Verify(good)
	if err != nil {
		t.Fatalf("a fresh token: %v", err)
	}
	if cl.Subject != "ci" || cl.Rights.String() != `[{"servers":["demo"],"roots":["/srv/src"],"scopes":["session"]}]` || cl.ID != info.ID {
		t.Errorf("claims %+v, want the grant", cl)
	}

	keys := stateKeys(t, dir)
	priv := keys[info.KeyID]
	if priv == nil {
		t.Fatalf("key %s not in the state file", info.KeyID)
	}
	pub := priv.Public().(ed25519.PublicKey)
	id := is.Identity()
	claims := func(mod func(*auth.Claims)) *auth.Claims {
		now := c.now()
		cl := &auth.Claims{RegisteredClaims: jwt.RegisteredClaims{ID: info.ID, Subject: "ci", Issuer: id, Audience: jwt.ClaimStrings{id},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
			Rights: rights.Rights{{Servers: []string{"*"}, Roots: []string{"/"}}}}
		if mod != nil {
			mod(cl)
		}
		return cl
	}
	_, stranger, _ := ed25519.GenerateKey(nil)
	none := sign(t, jwt.SigningMethodNone, claims(nil), info.KeyID, jwt.UnsafeAllowNoneSignatureType)
	parts := strings.Split(good, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"demo"`, `"*"`, 1))) + "." + parts[2]

	for _, tc := range []struct {
		name string
		tok  string
		want error
	}{
		{"forged with the real key", sign(t, jwt.SigningMethodEdDSA, claims(nil), info.KeyID, priv), nil},
		{"expired", sign(t, jwt.SigningMethodEdDSA, claims(func(cl *auth.Claims) { cl.ExpiresAt = jwt.NewNumericDate(c.now().Add(-time.Minute)) }), info.KeyID, priv), auth.ErrExpired},
		{"no exp", sign(t, jwt.SigningMethodEdDSA, claims(func(cl *auth.Claims) { cl.ExpiresAt = nil }), info.KeyID, priv), auth.ErrInvalid},
		{"not yet valid", sign(t, jwt.SigningMethodEdDSA, claims(func(cl *auth.Claims) { cl.NotBefore = jwt.NewNumericDate(c.now().Add(time.Hour)) }), info.KeyID, priv), auth.ErrNotYetValid},
		{"wrong audience", sign(t, jwt.SigningMethodEdDSA, claims(func(cl *auth.Claims) { cl.Audience = jwt.ClaimStrings{"mcpx:other/1"} }), info.KeyID, priv), auth.ErrWrongBroker},
		{"wrong issuer", sign(t, jwt.SigningMethodEdDSA, claims(func(cl *auth.Claims) { cl.Issuer = "mcpx:other/1" }), info.KeyID, priv), auth.ErrWrongBroker},
		{"unknown kid", sign(t, jwt.SigningMethodEdDSA, claims(nil), "nope", priv), auth.ErrInvalid},
		{"no kid", sign(t, jwt.SigningMethodEdDSA, claims(nil), "", priv), auth.ErrInvalid},
		{"another key under our kid", sign(t, jwt.SigningMethodEdDSA, claims(nil), info.KeyID, stranger), auth.ErrInvalid},
		{"alg none", none, auth.ErrInvalid},
		{"HS256 with the public key bytes", sign(t, jwt.SigningMethodHS256, claims(nil), info.KeyID, []byte(pub)), auth.ErrInvalid},
		{"tampered payload", tampered, auth.ErrInvalid},
		{"unknown jti", sign(t, jwt.SigningMethodEdDSA, claims(func(cl *auth.Claims) { cl.ID = "deadbeef" }), info.KeyID, priv), auth.ErrInvalid},
		{"garbage", "a.b.c", auth.ErrInvalid},
		{"empty", "", auth.ErrInvalid},
	} {
		_, err := is.Verify(tc.tok)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), info.KeyID) || strings.Contains(err.Error(), "key")) {
			t.Errorf("%s: error %q says something about keys", tc.name, err)
		}
	}

	if _, err := is.Revoke(info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := is.Verify(good); !errors.Is(err, auth.ErrRevoked) {
		t.Errorf("revoked: err = %v", err)
	}
	// Revocation outlives a restart, and so does the identity.
	again := open(t, dir, c)
	if _, err := again.Verify(good); !errors.Is(err, auth.ErrRevoked) {
		t.Errorf("revoked, after reopening: err = %v", err)
	}
	if again.Identity() != id || !strings.HasPrefix(id, "mcpx:box/") {
		t.Errorf("identity %q after reopening, was %q", again.Identity(), id)
	}
	// The natural expiry.
	tok2, _, err := is.Mint(auth.Grant{Subject: "b", Rights: rights.Rights{{Servers: []string{"*"}}}, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	c.add(time.Minute + time.Second)
	if _, err := is.Verify(tok2); !errors.Is(err, auth.ErrExpired) {
		t.Errorf("past exp: err = %v", err)
	}
}

// TestVerifyGivesItsOwnTokensNoLeeway (real-use 23): the minter is the
// verifier, so no clock can disagree: a token is refused the second it
// expires, and before the second it was issued.
func TestVerifyGivesItsOwnTokensNoLeeway(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	is := open(t, t.TempDir(), c)
	tok, _, err := is.Mint(auth.Grant{Subject: "a", Rights: rights.Rights{{Servers: []string{"*"}}}, TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.add(999 * time.Millisecond)
	if _, err := is.Verify(tok); err != nil {
		t.Errorf("within its second: %v", err)
	}
	c.add(time.Millisecond)
	if _, err := is.Verify(tok); !errors.Is(err, auth.ErrExpired) {
		t.Errorf("at exp: err = %v, want expired", err)
	}
	c.add(3 * time.Second)
	if _, err := is.Verify(tok); !errors.Is(err, auth.ErrExpired) {
		t.Errorf("3s past exp: err = %v, want expired", err)
	}
	if toks, _ := is.List(); len(toks) != 0 {
		t.Errorf("an expired token is still listed: %+v", toks)
	}
	c.add(-4*time.Second - time.Millisecond)
	if _, err := is.Verify(tok); !errors.Is(err, auth.ErrNotYetValid) {
		t.Errorf("before its iat and nbf: err = %v, want not yet valid", err)
	}
}

// TestRotateRetiresOldKeysWhenTheirTokensExpire: after Rotate, tokens of
// the old key still verify; once the last of them has expired the key is
// retired and a token naming it is refused as unknown.
func TestRotateRetiresOldKeysWhenTheirTokensExpire(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	is := open(t, dir, c)
	old, oldInfo, err := is.Mint(auth.Grant{Subject: "a", Rights: rights.Rights{{Servers: []string{"*"}}}, TTL: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	oldKey := stateKeys(t, dir)[oldInfo.KeyID]
	k, err := is.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if k.ID == oldInfo.KeyID || !k.Current {
		t.Fatalf("rotate gave %+v", k)
	}
	if _, err := is.Verify(old); err != nil {
		t.Errorf("a token of the old key after rotate: %v", err)
	}
	fresh, freshInfo, err := is.Mint(auth.Grant{Subject: "b", Rights: rights.Rights{{Servers: []string{"*"}}}, TTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if freshInfo.KeyID != k.ID {
		t.Errorf("minted with %s, want the new key %s", freshInfo.KeyID, k.ID)
	}
	if _, keys := is.List(); len(keys) != 2 {
		t.Errorf("keys after rotate: %+v, want old and new", keys)
	}

	c.add(2*time.Hour + time.Second)
	if _, err := is.Rotate(); err != nil { // any write retires what is due
		t.Fatal(err)
	}
	_, keys := is.List()
	for _, ki := range keys {
		if ki.ID == oldInfo.KeyID {
			t.Errorf("old key %s still listed after its last token expired", ki.ID)
		}
	}
	if _, ok := stateKeys(t, dir)[oldInfo.KeyID]; ok {
		t.Errorf("old key %s still in the state file", oldInfo.KeyID)
	}
	// A token forged with the retired key (exp in the future) is refused.
	now := c.now()
	forged := sign(t, jwt.SigningMethodEdDSA, &auth.Claims{RegisteredClaims: jwt.RegisteredClaims{ID: freshInfo.ID, Subject: "b",
		Issuer: is.Identity(), Audience: jwt.ClaimStrings{is.Identity()}, IssuedAt: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}}, oldInfo.KeyID, oldKey)
	if _, err := is.Verify(forged); !errors.Is(err, auth.ErrInvalid) {
		t.Errorf("a token of a retired key: err = %v, want invalid", err)
	}
	if _, err := is.Verify(fresh); err != nil {
		t.Errorf("the new key's token: %v", err)
	}
}

func TestStateFileIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	c := &clock{t: time.Now()}
	is := open(t, dir, c)
	if _, _, err := is.Mint(auth.Grant{Subject: "a", Rights: rights.Rights{{Servers: []string{"demo"}}}}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, auth.StateFile): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the state file alone (no temporary left)", len(ents))
	}
}

func TestMintRefusesBadGrants(t *testing.T) {
	is := open(t, t.TempDir(), &clock{t: time.Now()})
	for _, g := range []auth.Grant{
		{Rights: rights.Rights{{Servers: []string{"demo"}}}},
		{Subject: "a", Rights: rights.Rights{{Servers: []string{"demo"}}, {Roots: []string{"src"}}}},
		{Subject: "a", TTL: auth.MaxTTL + time.Hour},
		{Subject: "a", TTL: -time.Hour},
		{Subject: "a", Rights: rights.Rights{{Servers: []string{"demo"}, Tools: []string{"demo.get?"}}}},
	} {
		if _, _, err := is.Mint(g); !errors.Is(err, auth.ErrGrant) {
			t.Errorf("Mint(%+v) = %v, want a grant error", g, err)
		}
	}
}

// TestMintStoresRights: a token and its ledger entry carry the grant's
// Rights as they are, an empty list apart from an absent one, and copied
// (the grant's lists are the caller's).
func TestMintStoresRights(t *testing.T) {
	is := open(t, t.TempDir(), &clock{t: time.Now()})
	r := rights.Rights{
		{Servers: []string{"demo"}, Roots: []string{"/r/granted/"}, Scopes: []string{"cwd", "worktree"}},
		{Servers: []string{"hiddenvault"}, Roots: []string{"/r/other"}, Admin: true},
		{Servers: []string{}, Roots: []string{}, Scopes: []string{}, Tools: []string{}},
		{Servers: []string{"github"}, Tools: []string{"github.get_*"}},
	}
	want := `[{"servers":["demo"],"roots":["/r/granted"],"scopes":["cwd","worktree"]},{"servers":["hiddenvault"],"roots":["/r/other"],"admin":true},{"servers":[],"roots":[],"scopes":[],"tools":[]},{"servers":["github"],"tools":["github.get_*"]}]`
	tok, info, err := is.Mint(auth.Grant{Subject: "laptop", Rights: r})
	if err != nil {
		t.Fatal(err)
	}
	r[0].Servers[0] = "changed"
	r[3].Tools[0] = "github.*"
	cl, err := is.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if got := cl.Rights.String(); got != want {
		t.Errorf("claims' rights = %s, want %s", got, want)
	}
	if got := info.Rights.String(); got != want {
		t.Errorf("ledger's rights = %s, want %s", got, want)
	}
	tok, _, err = is.Mint(auth.Grant{Subject: "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if !strings.Contains(string(payload), `"rights":[]`) {
		t.Errorf("a token granting nothing: payload %s, want \"rights\":[]", payload)
	}
	if cl, err := is.Verify(tok); err != nil || cl.Rights == nil || len(cl.Rights) != 0 {
		t.Errorf("a token granting nothing verifies as %+v, %v", cl, err)
	}
}

// TestFlatTokens: tokens minted before tokens carried Rights (testdata/flat:
// a state file and three tokens minted by that code) keep working: their
// flat rights are one rule as their grant wrote it, nothing by omission but
// scopes, in the claims and in the ledger, and still after the state file
// is rewritten in the new form.
func TestFlatTokens(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{auth.StateFile, "ci.jwt", "bare.jwt", "every.jwt"} {
		b, err := os.ReadFile(filepath.Join("testdata/flat", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := &clock{t: time.Date(2026, 6, 2, 12, 0, 0, 0, time.UTC)}
	want := map[string]string{
		"ci":    `[{"servers":["demo"],"roots":["/srv/src"],"scopes":["cwd","session"],"admin":true,"projectConfig":true}]`,
		"bare":  `[{"servers":[],"roots":[]}]`,
		"every": `[{"servers":["*"],"roots":["/"]}]`,
	}
	check := func(is *auth.Issuer, when string) {
		t.Helper()
		for sub, w := range want {
			tok, err := os.ReadFile(filepath.Join(dir, sub+".jwt"))
			if err != nil {
				t.Fatal(err)
			}
			cl, err := is.Verify(strings.TrimSpace(string(tok)))
			if err != nil {
				t.Fatalf("%s: the flat token %s: %v", when, sub, err)
			}
			if got := cl.Rights.String(); cl.Subject != sub || got != w {
				t.Errorf("%s: the flat token %s carries %s %s, want %s", when, sub, cl.Subject, got, w)
			}
		}
		toks, _ := is.List()
		for _, in := range toks {
			if w, ok := want[in.Subject]; ok && in.Rights.String() != w {
				t.Errorf("%s: the ledger's %s has %s, want %s", when, in.Subject, in.Rights.String(), w)
			}
		}
	}
	is := open(t, dir, c)
	check(is, "as minted")
	if _, _, err := is.Mint(auth.Grant{Subject: "new", Rights: rights.None()}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.ReadFile(filepath.Join(dir, auth.StateFile))
	if strings.Contains(string(st), `"servers"`) && !strings.Contains(string(st), `"rights"`) {
		t.Fatalf("the state file was not rewritten: %s", st)
	}
	check(open(t, dir, c), "after the state file was rewritten")
}

// TestTokensDieWithTheirMintersRights (real-use 22): a token minted by a
// tailnet admin is refused once its minter is seen with narrower rights,
// works again when they cover it, and is revoked for good when the minter
// is seen without admin; a token minted with a token lives only as long as
// that token; the minter is in the ledger.
func TestTokensDieWithTheirMintersRights(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	is := open(t, dir, c)
	admin := rights.Rights{{Servers: []string{"*"}, Admin: true}}
	alice := auth.Minter{Name: "alice@example.com", Via: "tailnet", Rights: admin}
	tok, info, err := is.Mint(auth.Grant{Subject: "ci", Rights: rights.Rights{{Servers: []string{"demo"}, Admin: true}}, TTL: time.Hour, Minter: alice})
	if err != nil {
		t.Fatal(err)
	}
	if info.Minter.Name != alice.Name || info.Minter.Via != "tailnet" {
		t.Errorf("ledger minter = %+v", info.Minter)
	}
	if toks, _ := is.List(); len(toks) != 1 || toks[0].Minter.Name != alice.Name {
		t.Errorf("listed: %+v", toks)
	}
	child, _, err := is.Mint(auth.Grant{Subject: "ci-child", Rights: rights.Rights{{Servers: []string{"demo"}}}, TTL: time.Hour,
		Minter: auth.Minter{Name: "ci", Via: "jwt", Token: info.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := is.Verify(tok); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	// Narrowed, still admin: refused while not covered.
	if err := is.Seen("tailnet", alice.Name, rights.Rights{{Servers: []string{"other"}, Admin: true}}); err != nil {
		t.Fatal(err)
	}
	for _, tk := range []string{tok, child} {
		if _, err := is.Verify(tk); !errors.Is(err, auth.ErrMinter) {
			t.Errorf("minter narrowed: err = %v, want ErrMinter", err)
		}
	}
	// Survives a restart.
	is = open(t, dir, c)
	if _, err := is.Verify(tok); !errors.Is(err, auth.ErrMinter) {
		t.Errorf("minter narrowed, reopened: err = %v, want ErrMinter", err)
	}
	if err := is.Seen("tailnet", alice.Name, admin); err != nil {
		t.Fatal(err)
	}
	for _, tk := range []string{tok, child} {
		if _, err := is.Verify(tk); err != nil {
			t.Errorf("minter covers again: %v", err)
		}
	}
	// Seen without admin: revoked for good.
	if err := is.Seen("tailnet", alice.Name, rights.Rights{{Servers: []string{"*"}}}); err != nil {
		t.Fatal(err)
	}
	if err := is.Seen("tailnet", alice.Name, admin); err != nil {
		t.Fatal(err)
	}
	if _, err := is.Verify(tok); !errors.Is(err, auth.ErrRevoked) {
		t.Errorf("minter lost admin: err = %v, want ErrRevoked", err)
	}
	if _, err := is.Verify(child); !errors.Is(err, auth.ErrMinter) {
		t.Errorf("its minter's token revoked: err = %v, want ErrMinter", err)
	}
	// The owner's tokens answer to nobody.
	own, _, err := is.Mint(auth.Grant{Subject: "mine", Rights: admin, TTL: time.Hour, Minter: auth.Minter{Name: "local:1000", Via: "unix", Owner: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := is.Verify(own); err != nil {
		t.Errorf("owner's token: %v", err)
	}
}

// TestMintRefusesReservedSubjects (real-use 22): a token's bearer cannot be
// named like one of the broker's built-in callers.
func TestMintRefusesReservedSubjects(t *testing.T) {
	is := open(t, t.TempDir(), &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)})
	for _, sub := range []string{"loopback", "loopback:claude", "local:1000", "anonymous", "tailnet:unknown"} {
		_, _, err := is.Mint(auth.Grant{Subject: sub, Rights: rights.Rights{{Servers: []string{"*"}}}})
		if !errors.Is(err, auth.ErrGrant) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("subject %q: err = %v, want a reserved-subject grant error", sub, err)
		}
	}
	if _, _, err := is.Mint(auth.Grant{Subject: "loopback-ci", Rights: rights.Rights{{Servers: []string{"*"}}}}); err != nil {
		t.Errorf("an ordinary subject: %v", err)
	}
}

// TestTokensDieWithTheirMintersTools: a tailnet minter's tool patterns
// bound its tokens' at each use, as its servers do.
func TestTokensDieWithTheirMintersTools(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	is := open(t, t.TempDir(), c)
	wide := rights.Rights{{Servers: []string{"github"}, Tools: []string{"github.get_*"}, Admin: true}}
	alice := auth.Minter{Name: "alice@example.com", Via: "tailnet", Rights: wide}
	tok, _, err := is.Mint(auth.Grant{Subject: "ci", Rights: rights.Rights{{Servers: []string{"github"}, Tools: []string{"github.get_issue"}}}, TTL: time.Hour, Minter: alice})
	if err != nil {
		t.Fatal(err)
	}
	if err := is.Seen("tailnet", alice.Name, wide); err != nil {
		t.Fatal(err)
	}
	if _, err := is.Verify(tok); err != nil {
		t.Fatalf("minter's patterns cover the token's: %v", err)
	}
	narrow := rights.Rights{{Servers: []string{"github"}, Tools: []string{"github.list_*"}, Admin: true}}
	if err := is.Seen("tailnet", alice.Name, narrow); err != nil {
		t.Fatal(err)
	}
	if _, err := is.Verify(tok); !errors.Is(err, auth.ErrMinter) {
		t.Errorf("minter's patterns no longer cover the token's: err = %v, want ErrMinter", err)
	}
}
