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
