package openapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"mcpx.dev/mcpx/adapter/openapi"
)

const oauthSpec = `{"openapi": "3.1.0", "info": {"title": "oauth", "version": "1"},
  "components": {"securitySchemes": {"cc": {"type": "oauth2", "flows": {"clientCredentials": {
    "tokenUrl": "TOKEN_URL", "scopes": {"read": "read things", "write": "write things"}}}}}},
  "paths": {
    "/things": {"get": {"operationId": "listThings", "security": [{"cc": ["read"]}],
      "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array"}}}}}}},
    "/public": {"get": {"operationId": "public",
      "responses": {"200": {"description": "ok"}}}}}}`

// The document's clientCredentials flow: a token fetched once with the
// configured client's credentials (from the environment) and the
// operation's scopes, sent as a bearer token where the operation's
// security asks for it, and only there.
func TestOAuthClientCredentials(t *testing.T) {
	var tokens atomic.Int32
	var badSecret atomic.Bool
	srv, rec := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			tokens.Add(1)
			id, secret, _ := r.BasicAuth()
			r.ParseForm()
			if id != "client-1" || secret != "sec-ret" || badSecret.Load() || r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("scope") != "read" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(401)
				w.Write([]byte(`{"error": "invalid_client", "error_description": "client sec-ret unknown"}`))
				return
			}
			writeJSON(w, 200, map[string]any{"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600})
		case "/things":
			if r.Header.Get("Authorization") != "Bearer tok-1" {
				w.WriteHeader(401)
				return
			}
			writeJSON(w, 200, []string{"a"})
		default:
			w.Write([]byte("public " + r.Header.Get("Authorization")))
		}
	}))
	spec := filepath.Join(t.TempDir(), "oauth.json")
	os.WriteFile(spec, []byte(strings.Replace(oauthSpec, "TOKEN_URL", srv.URL+"/token", 1)), 0o600)
	env := map[string]string{"CC_ID": "client-1", "CC_SECRET": "sec-ret"}
	cfg := openapi.Config{
		Server: "cc", Spec: spec, BaseURL: srv.URL,
		OAuth2: &openapi.OAuth2{ClientID: "${env:CC_ID}", ClientSecret: "${env:CC_SECRET}"},
		Getenv: func(k string) string { return env[k] },
	}
	ns := open(t, cfg)
	for range 2 {
		if res := call(t, ns, "listThings", `{}`); res.IsError || string(res.StructuredContent) != `{"result":["a"]}` {
			t.Fatalf("listThings: %+v", res)
		}
	}
	if tokens.Load() != 1 {
		t.Errorf("%d token requests for two calls, want 1", tokens.Load())
	}
	if res := call(t, ns, "public", `{}`); text(res) != "public " {
		t.Errorf("an operation without security got %q", text(res))
	}
	if r := rec.last(t); r.Header.Get("Authorization") != "" {
		t.Errorf("public sent Authorization %q", r.Header.Get("Authorization"))
	}

	// A refused client: an error result with the endpoint's status and
	// error code, not what it echoed.
	badSecret.Store(true)
	res := call(t, open(t, cfg), "listThings", `{}`)
	if !res.IsError || !strings.Contains(text(res), "401") || !strings.Contains(text(res), "invalid_client") || strings.Contains(text(res), "sec-ret") {
		t.Errorf("a refused client: %+v", res)
	}

	delete(env, "CC_SECRET")
	op, _ := openapi.New(cfg)
	if _, err := op.Open(t.Context(), scope); err == nil || !strings.Contains(err.Error(), "openapi.oauth2.clientSecret: ${env:CC_SECRET} is not set") {
		t.Errorf("Open without the secret: %v", err)
	}
}
