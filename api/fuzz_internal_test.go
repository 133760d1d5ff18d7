package api

import (
	"net/http/httptest"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/wire"
)

// FuzzAuthorization fuzzes the bearer parsing of a loopback TCP request:
// whatever the Authorization header holds, bearer never returns a token
// with surrounding space or for another scheme, and identify admits the
// request only as the owner with the daemon's exact token, or as a signed
// token's subject with the claims of a token the issuer minted (the fuzzer
// cannot forge one); anything else is a 401 or 403 problem, never a panic.
func FuzzAuthorization(f *testing.F) {
	const owner = "0123456789abcdef0123456789abcdef"
	is, err := auth.Open(auth.Options{Dir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	tok, info, err := is.Mint(auth.Grant{Subject: "fuzz", Rights: rights.Rights{rights.Rule{Servers: []string{"demo"}}.Granted()}})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"Bearer " + owner, "bearer  " + owner + " ", "Bearer " + tok, "BEARER\t" + tok, "Basic " + owner,
		"Bearer", "Bearer ", " Bearer x", "Bearer a.b.c", "Bearer " + tok + "x", "Bearer " + strings.ToUpper(tok), "Bearer ..", ""} {
		f.Add(s)
	}
	s := newServer(Options{Token: owner, Tokens: is})
	f.Fuzz(func(t *testing.T, v string) {
		if got, ok := bearer(v); ok && (got == "" || strings.TrimSpace(got) != got || !strings.EqualFold(v[:6], "bearer")) {
			t.Fatalf("bearer(%q) = %q", v, got)
		}
		r := httptest.NewRequest("GET", "/v1/whoami", nil)
		r.RemoteAddr, r.Host = "127.0.0.1:5555", "127.0.0.1:7777"
		r.Header.Set(wire.HeaderClient, "fuzz")
		r.Header[wire.HeaderAuthorization] = []string{v}
		c, err := s.identify(r)
		if err != nil {
			return
		}
		got, _ := bearer(v)
		switch {
		case c.Owner && got == owner:
		case c.Via == wire.ViaJWT && c.Name == "fuzz" && len(c.Rights) == 1 && !c.Rights.Admin() && strings.Join(c.Rights[0].Servers, ",") == "demo":
			cl, err := is.Verify(got)
			if err != nil || cl.ID != info.ID {
				t.Fatalf("admitted %q as %+v, but it does not verify as the minted token: %v", v, c, err)
			}
		default:
			t.Fatalf("Authorization %q admitted as %+v", v, c)
		}
	})
}
