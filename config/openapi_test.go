package config_test

import (
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
)

func TestOpenAPIBlock(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"servers": {"pets": {"openapi": {
		"spec": "https://petstore3.swagger.io/api/v3/openapi.json",
		"baseUrl": "http://127.0.0.1:8080/api/v3",
		"headers": {"api_key": "${env:PET_KEY}"},
		"operations": ["getPetById", "tag:store"],
		"oauth2": {"clientId": "pets-mcpx", "clientSecret": "${env:PET_SECRET}", "scopes": ["read:pets"]}}}}}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Servers["pets"].OpenAPI
	if o == nil || o.Spec != "https://petstore3.swagger.io/api/v3/openapi.json" || o.BaseURL != "http://127.0.0.1:8080/api/v3" ||
		o.Headers["api_key"] != "${env:PET_KEY}" || !slices.Equal(o.Operations, []string{"getPetById", "tag:store"}) ||
		o.OAuth2 == nil || o.OAuth2.ClientID != "pets-mcpx" || o.OAuth2.ClientSecret != "${env:PET_SECRET}" {
		t.Fatalf("decoded %+v", o)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings %v", cfg.Warnings)
	}
	for _, spec := range []string{"petstore.yaml", "/etc/mcpx/api.json", "nix:github:o/r#spec"} {
		if _, err := config.Parse([]byte(`{"servers": {"x": {"openapi": {"spec": "`+spec+`"}}}}`), "test"); err != nil {
			t.Errorf("spec %s: %v", spec, err)
		}
	}
	cfg, err = config.Parse([]byte(`{"servers": {"x": {"openapi": {"spec": "a.json", "oauth2": {"clientId": "i", "clientSecret": "literal"}}}}}`), "test")
	if err != nil || len(cfg.Warnings) != 1 || cfg.Warnings[0].Field != "openapi.oauth2.clientSecret" {
		t.Errorf("a literal client secret: %v, warnings %v", err, cfg.Warnings)
	}
}

func TestOpenAPIBlockErrors(t *testing.T) {
	for _, tc := range []struct {
		name, block, field string
		want               []string
	}{
		{"not an object", `"x"`, "openapi", []string{"want an object"}},
		{"no spec", `{}`, "openapi.spec", []string{"spec is empty", "file path, an http(s) URL or a nix: spec"}},
		{"misspelt field", `{"spec": "a.json", "baseURL": "http://h"}`, "openapi.baseURL", []string{`unknown field "baseURL"`, `did you mean "baseUrl"?`}},
		{"spec wrong type", `{"spec": 1}`, "openapi.spec", []string{"want a string: a file path"}},
		{"spec placeholder", `{"spec": "${mcpx.root}/api.json"}`, "openapi.spec", []string{"may not hold placeholders", "loaded once"}},
		{"spec bad URL", `{"spec": "ftp://host/a.json"}`, "openapi.spec", []string{"not an absolute http(s) URL"}},
		{"spec bad nix", `{"spec": "nix:githb:o/r#x"}`, "openapi.spec", []string{`unknown flake reference type "githb:"`}},
		{"relative baseUrl", `{"spec": "a.json", "baseUrl": "/api"}`, "openapi.baseUrl", []string{`"/api" is not an absolute http(s) URL`}},
		{"bad header name", `{"spec": "a.json", "headers": {"a b": "x"}}`, "openapi.headers", []string{`invalid header name "a b"`}},
		{"mcpx placeholder in header", `{"spec": "a.json", "headers": {"X-Root": "${mcpx.root}"}}`, "openapi.headers.X-Root", []string{`"${mcpx.root}" is not expanded here`, "only ${env:NAME}"}},
		{"bad env name", `{"spec": "a.json", "headers": {"A": "${env:1X}"}}`, "openapi.headers.A", []string{"is not expanded here"}},
		{"empty operation", `{"spec": "a.json", "operations": ["a", "tag:"]}`, "openapi.operations[1]", []string{"an operation is empty"}},
		{"duplicate operation", `{"spec": "a.json", "operations": ["a", "a"]}`, "openapi.operations[1]", []string{`"a" is listed twice`}},
		{"no operations", `{"spec": "a.json", "operations": []}`, "openapi.operations", []string{"would have no tools"}},
		{"oauth2 misspelt", `{"spec": "a.json", "oauth2": {"clientID": "a", "clientSecret": "${env:S}"}}`, "openapi.oauth2.clientID", []string{`did you mean "clientId"?`}},
		{"oauth2 no secret", `{"spec": "a.json", "oauth2": {"clientId": "a"}}`, "openapi.oauth2.clientSecret", []string{"clientSecret is empty", "${env:NAME}"}},
		{"oauth2 bad token URL", `{"spec": "a.json", "oauth2": {"clientId": "a", "clientSecret": "${env:S}", "tokenUrl": "token"}}`, "openapi.oauth2.tokenUrl", []string{"not an absolute http(s) URL"}},
	} {
		_, err := config.Parse([]byte(`{"servers": {"pets": {"openapi": `+tc.block+`}}}`), "test")
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !slices.ContainsFunc(configErrors(t, err), func(p *config.Problem) bool {
			return p.Server == "pets" && p.Field == tc.field && !slices.ContainsFunc(tc.want, func(w string) bool { return !strings.Contains(p.Error(), w) })
		}) {
			t.Errorf("%s: no problem with field %s saying %q in %v", tc.name, tc.field, tc.want, err)
		}
	}
	for field, server := range map[string]string{
		"command": `"command": "x"`, "url": `"url": "http://h/mcp"`, "args": `"args": ["a"]`,
		"headers": `"headers": {"A": "b"}`, "cli": `"cli": {"tools": {}}`,
	} {
		_, err := config.Parse([]byte(`{"servers": {"pets": {"openapi": {"spec": "a.json"}, `+server+`}}}`), "test")
		if err == nil {
			t.Errorf("%s beside openapi: no error", field)
			continue
		}
		if ps := configErrors(t, err); !slices.ContainsFunc(ps, func(p *config.Problem) bool { return p.Field == field && p.Server == "pets" }) {
			t.Errorf("%s beside openapi: %v", field, err)
		}
	}
}
