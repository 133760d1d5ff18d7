package public

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"mcpx.dev/mcpx/auth/access"
)

// TestCacheTTL: a document is kept by its Cache-Control, within bounds.
func TestCacheTTL(t *testing.T) {
	for _, tc := range []struct {
		cc   []string
		want time.Duration
	}{
		{nil, cimdDefaultTTL},
		{[]string{"public, max-age=600"}, 10 * time.Minute},
		{[]string{"max-age=5"}, cimdMinTTL},
		{[]string{"max-age=0"}, cimdMinTTL},
		{[]string{"no-store"}, cimdMinTTL},
		{[]string{"max-age=3600", "no-cache"}, cimdMinTTL},
		{[]string{"max-age=99999999999"}, cimdMaxTTL},
		{[]string{`max-age="120"`}, 2 * time.Minute},
		{[]string{"max-age=-3"}, cimdDefaultTTL},
		{[]string{"max-age=junk"}, cimdDefaultTTL},
	} {
		if got := cacheTTL(tc.cc); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.cc, got, tc.want)
		}
	}
}

// TestFetchTestOnlyInTests: the option that lets the metadata document
// fetch reach loopback is set by tests only: no product file of the
// module names it but this package's own declaration.
func TestFetchTestOnlyInTests(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	here, _ := filepath.Abs(".")
	found := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go"):
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "FetchTest") && filepath.Dir(p) != here {
			t.Errorf("%s names FetchTest: only tests may loosen the metadata document fetch", p)
		}
		found++
		return nil
	})
	if err != nil || found < 100 {
		t.Fatalf("walked %d Go files: %v", found, err)
	}
}

// FuzzCIMDDocument: whatever a metadata document's URL and body are, the
// checks never panic, and a document taken is its URL's, with redirect
// URIs the authorization server accepts and a name without control
// characters.
func FuzzCIMDDocument(f *testing.F) {
	const id = "https://app.example/client.json"
	f.Add(id, `{"client_id":"`+id+`","client_name":"App","redirect_uris":["https://app.example/cb"]}`)
	f.Add(id, `{"client_id":"`+id+`","redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}`)
	f.Add("https://app.example/", `{}`)
	f.Add("https://app.example/a/../b", `[]`)
	f.Add(id, `{"client_id":"`+id+`","client_secret":"s","redirect_uris":["https://app.example/cb"]}`)
	f.Fuzz(func(t *testing.T, id, body string) {
		if checkCIMDURL(id) != nil {
			return
		}
		if u, err := url.Parse(id); err != nil || u.Scheme != "https" || u.Path == "" || u.Path == "/" || u.RawQuery != "" {
			t.Fatalf("checkCIMDURL took %q", id)
		}
		c, err := parseCIMD(id, []byte(body))
		if err != nil {
			return
		}
		if c.ID != id || len(c.RedirectURIs) == 0 || strings.ContainsFunc(c.Name, unicode.IsControl) {
			t.Fatalf("took %q from %q: %+v", body, id, c)
		}
		for _, r := range c.RedirectURIs {
			if access.CheckRedirect(r) != nil {
				t.Fatalf("took the redirect URI %q", r)
			}
		}
	})
}
