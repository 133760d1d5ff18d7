package access_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
)

func TestIssueCheckRevokeExpire(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := access.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	st.SetClock(func() time.Time { return now })
	g := access.Grant{Client: "https://app.example/cm.json", Resource: "https://mcpx.example/mcp", Scopes: []string{"mcp"},
		Rights: rights.Rights{{Servers: []string{"demo"}}}, TTL: time.Minute}
	secret, tok, err := st.Issue(g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, access.Prefix) {
		t.Fatalf("secret %q lacks the prefix", secret)
	}
	got, err := st.Check(secret)
	if err != nil || got.ID != tok.ID || got.Resource != g.Resource || !got.Rights.MayUse("demo") || got.Rights.MayUse("other") {
		t.Fatalf("Check = %+v, %v", got, err)
	}
	// At rest: the hash, never the secret; 0600.
	b, err := os.ReadFile(filepath.Join(dir, access.TokensFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || strings.Contains(string(b), strings.TrimPrefix(secret, access.Prefix)) {
		t.Fatal("the file holds the secret")
	}
	if fi, _ := os.Stat(filepath.Join(dir, access.TokensFile)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	// Another store of the directory (a restarted daemon) knows it.
	st2, err := access.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st2.SetClock(func() time.Time { return now })
	if _, err := st2.Check(secret); err != nil {
		t.Fatalf("after reopening: %v", err)
	}
	for _, bad := range []string{"", "mcpx_abc", access.Prefix + "nope", secret + "x"} {
		if _, err := st.Check(bad); !errors.Is(err, access.ErrMalformed) && !errors.Is(err, access.ErrUnknown) {
			t.Errorf("Check(%q) = %v", bad, err)
		}
	}
	now = now.Add(time.Minute)
	if _, err := st.Check(secret); !errors.Is(err, access.ErrExpired) {
		t.Fatalf("expired: %v", err)
	}
	now = now.Add(-time.Second)
	if err := st.Revoke(tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Check(secret); !errors.Is(err, access.ErrUnknown) {
		t.Fatalf("revoked: %v", err)
	}
	if err := st.Revoke(tok.ID); err == nil {
		t.Fatal("revoking twice succeeded")
	}
}

func TestIssueBoundsTTLAndRefusesEmpty(t *testing.T) {
	t.Parallel()
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := st.Issue(access.Grant{Client: "c", Resource: "r", TTL: 1000 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if d := tok.Expires.Sub(tok.Created); d > access.MaxTTL+time.Second {
		t.Fatalf("ttl %v over the cap", d)
	}
	if tok.Rights == nil || tok.Rights.MayUse("x") {
		t.Fatalf("no rights given must allow nothing: %+v", tok.Rights)
	}
	if _, _, err := st.Issue(access.Grant{Resource: "r"}); err == nil {
		t.Fatal("a token without a client was issued")
	}
	if _, _, err := st.Issue(access.Grant{Client: "c"}); err == nil {
		t.Fatal("a token without a resource was issued")
	}
}

func FuzzCheck(f *testing.F) {
	st, err := access.Open(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	secret, _, err := st.Issue(access.Grant{Client: "c", Resource: "r"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(secret)
	f.Add("mcpxat_")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := st.Check(s)
		if err == nil && s != secret {
			t.Fatalf("Check(%q) admitted %+v", s, tok)
		}
	})
}

// TestRotate: a refresh token is exchanged once for a new pair of its
// family; exchanging it again revokes the family, the new pair included;
// another client cannot use it.
func TestRotate(t *testing.T) {
	t.Parallel()
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := access.Grant{Client: "c1", Resource: "https://m.example/mcp", Scopes: []string{"mcp"}, Rights: rights.Rights{{Servers: []string{"demo"}}}}
	at, rt, _, err := st.IssuePair(g, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := st.Rotate(rt, "c2"); !errors.Is(err, access.ErrUnknown) {
		t.Fatalf("another client's rotation: %v", err)
	}
	if _, _, _, err := st.Rotate(at, "c1"); !errors.Is(err, access.ErrUnknown) {
		t.Fatalf("rotating an access token: %v", err)
	}
	at2, rt2, tok2, err := st.Rotate(rt, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !tok2.Rights.MayUse("demo") || tok2.Rights.MayUse("x") || tok2.Resource != g.Resource {
		t.Fatalf("the rotated token's grant: %+v", tok2)
	}
	if _, err := st.Check(at2); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := st.Rotate(rt, "c1"); !errors.Is(err, access.ErrReused) {
		t.Fatalf("reuse: %v", err)
	}
	for _, s := range []string{at, at2, rt2} {
		if _, err := st.Check(s); !errors.Is(err, access.ErrUnknown) {
			t.Errorf("after reuse a token of the family lives: %v", err)
		}
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := access.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Register("app", []string{"https://app.example/cb", "http://127.0.0.1:3000/cb"})
	if err != nil {
		t.Fatal(err)
	}
	st2, _ := access.Open(dir)
	if got, ok := st2.Client(c.ID); !ok || got.Name != "app" || len(got.RedirectURIs) != 2 {
		t.Fatalf("after reopening: %+v %v", got, ok)
	}
	for _, bad := range [][]string{nil, {"http://app.example/cb"}, {"https://app.example/cb#x"}, {"javascript:alert(1)"}, {"/cb"}} {
		if _, err := st.Register("x", bad); err == nil {
			t.Errorf("registered redirects %q", bad)
		}
	}
}
