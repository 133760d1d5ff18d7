package config

import (
	"strings"
	"testing"
)

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
