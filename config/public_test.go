package config

import (
	"strings"
	"testing"
)

// TestPublicIssuerChecks: an issuer that would fetch keys in the clear, a
// grant without servers or with a relative root, and grants without an
// issuer are refused, each naming its field.
func TestPublicIssuerChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ doc, field string }{
		{`{"public": {"issuer": "http://idp.example.com", "grants": [{"claim": "sub", "values": ["a"], "servers": ["s"]}]}}`, "public.issuer"},
		{`{"public": {"issuer": "https://idp.example.com", "grants": [{"claim": "sub", "values": ["a"]}]}}`, "public.grants[0].servers"},
		{`{"public": {"issuer": "https://idp.example.com", "grants": [{"claim": "sub", "values": ["a"], "servers": ["s"], "roots": ["src"]}]}}`, "public.grants[0].roots[0]"},
		{`{"public": {"issuer": "https://idp.example.com", "grants": [{"claim": "", "values": [], "servers": ["s"]}]}}`, "public.grants[0].values"},
		{`{"public": {"grants": [{"claim": "sub", "values": ["a"], "servers": ["s"]}]}}`, "public.issuer"},
		{`{"public": {"issuer": "https://idp.example.com", "grants": [{"claim": "sub", "values": ["a"], "servers": ["s"]}], "clients": [{"id": "a", "redirectUris": ["https://a.example/cb"]}]}}`, "public.clients"},
	} {
		_, err := Parse([]byte(tc.doc), "c.json")
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want a problem naming %s", tc.doc, err, tc.field)
		}
	}
	cfg, err := Parse([]byte(`{"public": {"issuer": "http://127.0.0.1:9000", "grants": [{"claim": "groups", "values": ["g"], "servers": ["*"], "tools": ["a.b_*"]}]}}`), "c.json")
	if err != nil || cfg.Public.Issuer != "http://127.0.0.1:9000" || len(cfg.Public.Grants) != 1 || cfg.Public.Grants[0].Tools[0] != "a.b_*" {
		t.Fatalf("a loopback issuer: %+v, %v", cfg, err)
	}
}

// TestPublicClients: the public face's pre-registered clients, read and
// checked by the decoder, and judged alike by the schema.
func TestPublicClients(t *testing.T) {
	s := compileSchema(t)
	for _, tc := range []struct {
		public, err string
		schemaBlind bool // a rule JSON Schema cannot state (ids unique within the array)
	}{
		{`{}`, "", false},
		{`{"clients": []}`, "", false},
		{`{"clients": [{"id": "my-app", "name": "My app", "redirectUris": ["https://app.example.com/cb", "http://127.0.0.1:8765/cb"]}]}`, "", false},
		{`{"clients": [{"id": "https://app.example.com/client.json", "redirectUris": ["https://claude.ai/api/mcp/auth_callback"]}]}`, "", false},
		{`{"clients": [{"id": "", "redirectUris": ["https://a.example/cb"]}]}`, "public.clients[0].id", false},
		{`{"clients": [{"redirectUris": ["https://a.example/cb"]}]}`, "a client needs an id", false},
		{`{"clients": [{"id": "a b", "redirectUris": ["https://a.example/cb"]}]}`, "spaces", false},
		{`{"clients": [{"id": "mcpxc_x", "redirectUris": ["https://a.example/cb"]}]}`, "begins with mcpxc_", false},
		{`{"clients": [{"id": "a", "redirectUris": ["https://a.example/cb"]}, {"id": "a", "redirectUris": ["https://a.example/cb"]}]}`, "given twice", true},
		{`{"clients": [{"id": "a"}]}`, "give 1 to 8", false},
		{`{"clients": [{"id": "a", "redirectUris": ["http://evil.example/cb"]}]}`, "public.clients[0].redirectUris[0]", false},
		{`{"clients": [{"id": "a", "redirectUris": ["cb"]}]}`, "not an absolute URL", false},
		{`{"clients": [{"id": "a", "redirectUris": ["https://a.example/cb"], "secret": "s"}]}`, `unknown field "secret"`, false},
		{`{"clients": [{"id": "a", "redirectUri": ["https://a.example/cb"]}]}`, `did you mean "redirectUris"`, false},
		{`{"clients": {"id": "a"}}`, "public.clients must be an array", false},
		{`{"client": []}`, `did you mean "clients"`, false},
		{`[]`, "public must be an object", false},
	} {
		doc := `{"servers": {}, "public": ` + tc.public + `}`
		_, err := Parse([]byte(doc), "t.json")
		schemaErr := schemaVerdict(s, []byte(doc))
		if tc.err == "" {
			if err != nil || schemaErr != nil {
				t.Errorf("%s: decoder %v, schema %v", tc.public, err, schemaErr)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want one saying %q", tc.public, err, tc.err)
		}
		if schemaErr == nil && !tc.schemaBlind {
			t.Errorf("%s: the schema accepts what the decoder refuses", tc.public)
		}
	}
	cfg, err := Parse([]byte(`{"servers": {}, "public": {"clients": [{"id": "my-app", "name": "My app", "redirectUris": ["https://app.example.com/cb"]}]}}`), "t.json")
	if err != nil || len(cfg.Public.Clients) != 1 || cfg.Public.Clients[0].Name != "My app" || cfg.Public.Clients[0].RedirectURIs[0] != "https://app.example.com/cb" {
		t.Fatalf("%+v %v", cfg, err)
	}
}
