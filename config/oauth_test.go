package config_test

import (
	"errors"
	"testing"

	"mcpx.dev/mcpx/config"
)

// TestOAuth: a url server's "oauth" decodes; what would not work is
// refused naming the field, and a secret written out is a warning.
func TestOAuth(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"servers": {"corp": {"url": "https://mcp.corp.example/mcp",
		"oauth": {"clientId": "mcpx", "clientSecret": "${env:CORP_SECRET}", "clientMetadataUrl": "https://example.com/mcpx/client.json"}}}}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := config.Parse([]byte(`{"servers": {"s": {"url": "https://m.example/mcp", "oauth": {"perCaller": true}}}}`), "test"); err != nil || !cfg.Servers["s"].OAuth.PerCaller {
		t.Errorf("perCaller: %v", err)
	}
	o := cfg.Servers["corp"].OAuth
	if o == nil || o.ClientID != "mcpx" || o.ClientSecret != "${env:CORP_SECRET}" || o.ClientMetadataURL != "https://example.com/mcpx/client.json" {
		t.Fatalf("decoded %+v", o)
	}
	cfg, err = config.Parse([]byte(`{"servers": {"corp": {"url": "https://mcp.corp.example/mcp", "oauth": {"clientId": "i", "clientSecret": "literal"}}}}`), "test")
	if err != nil || len(cfg.Warnings) != 1 || cfg.Warnings[0].Field != "oauth.clientSecret" {
		t.Errorf("a literal secret: %v, warnings %v", err, cfg.Warnings)
	}
	for _, tc := range []struct{ doc, field string }{
		{`{"command": "srv", "oauth": {"clientId": "i"}}`, "oauth"},
		{`{"url": "https://m.example/mcp", "headers": {"authorization": "Bearer x"}, "oauth": {}}`, "oauth"},
		{`{"url": "https://m.example/mcp", "oauth": {"clientSecret": "${env:S}"}}`, "oauth.clientSecret"},
		{`{"url": "https://m.example/mcp", "oauth": {"clientMetadataUrl": "http://example.com/c.json"}}`, "oauth.clientMetadataUrl"},
		{`{"url": "https://m.example/mcp", "oauth": {"clientMetadataUrl": "https://example.com"}}`, "oauth.clientMetadataUrl"},
		{`{"url": "https://m.example/mcp", "oauth": {"clientId": "${mcpx.root}"}}`, "oauth.clientId"},
		{`{"url": "https://m.example/mcp", "oauth": "yes"}`, "oauth"},
		{`{"url": "https://m.example/mcp", "oauth": {"grant": "password"}}`, "oauth.grant"},
		{`{"url": "https://m.example/mcp", "oauth": {"grant": "client_credentials", "privateKey": "${env:K}"}}`, "oauth.clientId"},
		{`{"url": "https://m.example/mcp", "oauth": {"grant": "client_credentials", "clientId": "i"}}`, "oauth.clientSecret"},
		{`{"url": "https://m.example/mcp", "oauth": {"clientId": "i", "privateKey": "${env:K}"}}`, "oauth.privateKey"},
		{`{"url": "https://m.example/mcp", "oauth": {"grant": "client_credentials", "clientId": "i", "privateKey": "${env:K}", "signingAlgorithm": "HS256"}}`, "oauth.signingAlgorithm"},
		{`{"url": "https://m.example/mcp", "oauth": {"grant": "client_credentials", "clientId": "i", "clientSecret": "${env:S}", "perCaller": true}}`, "oauth.perCaller"},
		{`{"url": "https://m.example/mcp", "oauth": {"perCaller": "yes"}}`, "oauth.perCaller"},
	} {
		_, err := config.Parse([]byte(`{"servers": {"s": `+tc.doc+`}}`), "test")
		var p *config.Problem
		if !errors.As(err, &p) || p.Field != tc.field {
			t.Errorf("%s: %v, want an error naming field %s", tc.doc, err, tc.field)
		}
	}
}
