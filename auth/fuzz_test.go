package auth_test

import (
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
)

// FuzzVerify feeds arbitrary strings to Verify: it never panics, every
// error is one of its five, and a string it accepts carries exactly the
// claims of the token the issuer minted (a re-encoding of it, at most).
func FuzzVerify(f *testing.F) {
	is, err := auth.Open(auth.Options{Dir: f.TempDir(), Hostname: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	tok, info, err := is.Mint(auth.Grant{Subject: "fuzz", Rights: rights.Rights{{Servers: []string{"demo"}, Roots: []string{"/srv"}}}, TTL: time.Hour})
	if err != nil {
		f.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	for _, s := range []string{tok, tok + "A", parts[0] + "." + parts[1] + ".", parts[0] + ".." + parts[2],
		"eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + ".", "", ".", "a.b.c", strings.ToUpper(tok)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cl, err := is.Verify(s)
		if err != nil {
			for _, want := range []error{auth.ErrInvalid, auth.ErrExpired, auth.ErrNotYetValid, auth.ErrWrongBroker, auth.ErrRevoked} {
				if err == want {
					return
				}
			}
			t.Fatalf("Verify(%q): unexpected error %v", s, err)
		}
		if cl.ID != info.ID || cl.Subject != "fuzz" || len(cl.Rights) != 1 || strings.Join(cl.Rights[0].Servers, ",") != "demo" || strings.Join(cl.Rights[0].Roots, ",") != "/srv" || cl.Rights.Admin() {
			t.Fatalf("Verify(%q) accepted claims %+v, not the minted token's", s, cl)
		}
	})
}
