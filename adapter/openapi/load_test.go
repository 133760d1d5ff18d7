package openapi_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/adapter/openapi"
)

const brokenRef = `openapi: 3.0.3
info: {title: broken, version: "1"}
paths:
  /pets:
    get:
      operationId: listPets
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Missing"}
components:
  schemas:
    Pet: {type: object}
`

// A broken $ref fails Open with the parser's message, the server and the
// spec named.
func TestBrokenRef(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "broken.yaml")
	os.WriteFile(spec, []byte(brokenRef), 0o600)
	op, err := openapi.New(openapi.Config{Server: "bad", Spec: spec, BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = op.Open(t.Context(), adapter.Scope{Server: "bad"})
	if err == nil {
		t.Fatal("Open of a document with a broken $ref succeeded")
	}
	for _, want := range []string{"server bad", spec, "#/components/schemas/Missing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	t.Logf("the error: %v", err)

	for name, doc := range map[string]string{
		"not yaml":   "{",
		"swagger 2":  `{"swagger": "2.0", "info": {"title": "x", "version": "1"}, "paths": {}}`,
		"no servers": `{"openapi": "3.0.0", "info": {"title": "x", "version": "1"}, "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}}}`,
	} {
		os.WriteFile(spec, []byte(doc), 0o600)
		op, _ := openapi.New(openapi.Config{Server: "bad", Spec: spec})
		if _, err := op.Open(t.Context(), scope); err == nil || !strings.Contains(err.Error(), "server bad: spec "+spec) {
			t.Errorf("%s: Open error %v", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if _, err := openapi.New(openapi.Config{Server: "bad"}); err == nil || !strings.Contains(err.Error(), "openapi.spec") {
		t.Errorf("no spec: %v", err)
	}
	if _, err := openapi.New(openapi.Config{Server: "bad", Spec: "x", Headers: map[string]string{"A": "${mcpx.root}"}}); err == nil || !strings.Contains(err.Error(), "openapi.headers.A") {
		t.Errorf("a ${mcpx.root} header: %v", err)
	}
}

// A URL spec is fetched once, revalidated with its ETag on a later Open,
// and its last copy used (from CacheDir by a new opener) when the URL is
// unreachable. A relative servers[] URL is resolved against the spec's.
func TestSpecURLCache(t *testing.T) {
	doc, _ := os.ReadFile("testdata/petstore3.yaml")
	doc = []byte(strings.Replace(string(doc), "https://petstore3.swagger.io/api/v3", "/api/v3", 1))
	var fetches, notModified atomic.Int32
	var down atomic.Bool
	srv, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/openapi.yaml" {
			newPetstore().ServeHTTP(w, r)
			return
		}
		if down.Load() {
			w.WriteHeader(503)
			return
		}
		fetches.Add(1)
		if r.Header.Get("If-None-Match") == `"v1"` {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(doc)
	}))
	cache := t.TempDir()
	cfg := openapi.Config{Server: "pets", Spec: srv.URL + "/openapi.yaml", CacheDir: cache}
	op, err := openapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		ns, err := op.Open(t.Context(), scope)
		if err != nil {
			t.Fatal(err)
		}
		if res := call(t, ns, "getPetById", `{"petId": 1}`); res.IsError {
			t.Fatalf("Open %d: getPetById through the relative server URL: %s", i, text(res))
		}
	}
	if fetches.Load() != 2 || notModified.Load() != 1 {
		t.Errorf("fetches %d, 304s %d; want 2 and 1", fetches.Load(), notModified.Load())
	}

	down.Store(true)
	op2, _ := openapi.New(cfg) // a new opener: only the disk copy
	ns, err := op2.Open(t.Context(), scope)
	if err != nil {
		t.Fatalf("Open with the URL down and a cached copy: %v", err)
	}
	if len(tools(t, ns)) != 19 {
		t.Errorf("the cached copy has %d tools", len(tools(t, ns)))
	}
	srv.Close() // unreachable: the disk copy again
	op4, _ := openapi.New(cfg)
	if _, err := op4.Open(t.Context(), scope); err != nil {
		t.Fatalf("Open with the URL unreachable and a cached copy: %v", err)
	}
	cfg.CacheDir = ""
	op3, _ := openapi.New(cfg)
	if _, err := op3.Open(t.Context(), scope); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Open with the URL unreachable and no copy: %v", err)
	}
}

// A file spec is read again when it changes.
func TestSpecFileChange(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	write := func(id string, mod time.Time) {
		os.WriteFile(spec, []byte(`{"openapi": "3.1.0", "info": {"title": "x", "version": "1"},
			"paths": {"/a": {"get": {"operationId": "`+id+`", "responses": {"200": {"description": "ok"}}}}}}`), 0o600)
		os.Chtimes(spec, mod, mod)
	}
	write("first", time.Unix(1000, 0))
	op, _ := openapi.New(openapi.Config{Server: "x", Spec: spec, BaseURL: "http://127.0.0.1:1"})
	names := func() string {
		ns, err := op.Open(t.Context(), scope)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := ns.ListTools(t.Context())
		return l[0].Name
	}
	if n := names(); n != "first" {
		t.Fatalf("tool %s", n)
	}
	write("second", time.Unix(2000, 0))
	if n := names(); n != "second" {
		t.Errorf("after the change: tool %s", n)
	}
}

// Headers carry ${env:NAME} from the daemon's environment; an unset one
// fails Open naming the variable; the value is never in a message.
func TestHeadersFromEnv(t *testing.T) {
	srv, rec := serve(t, newPetstore())
	cfg := petstoreConfig(srv.URL)
	cfg.Headers = map[string]string{"X-Api-Key": "key-${env:PET_KEY}", "Authorization": "Bearer ${env:PET_TOKEN}"}
	env := map[string]string{"PET_KEY": "s3cret", "PET_TOKEN": "t0ken"}
	cfg.Getenv = func(k string) string { return env[k] }
	ns := open(t, cfg)
	cfg.Headers["API_KEY"] = "${env:PET_KEY}"
	if del := compileSchema(t, "deletePet", tools(t, open(t, cfg))["deletePet"].InputSchema); valid(t, del, `{"petId": 1, "api_key": "mine"}`) {
		t.Error("deletePet takes an api_key parameter the config sets")
	}
	delete(cfg.Headers, "API_KEY")
	res := call(t, ns, "getPetById", `{"petId": 99}`)
	r := rec.last(t)
	if r.Header.Get("X-Api-Key") != "key-s3cret" || r.Header.Get("Authorization") != "Bearer t0ken" {
		t.Errorf("headers sent: %v", r.Header)
	}
	if !res.IsError || strings.Contains(text(res), "s3cret") || strings.Contains(text(res), "t0ken") {
		t.Errorf("the 404 result: %s", text(res))
	}
	delete(env, "PET_TOKEN")
	op, _ := openapi.New(cfg)
	_, err := op.Open(t.Context(), scope)
	if err == nil || !strings.Contains(err.Error(), "${env:PET_TOKEN} is not set") || !strings.Contains(err.Error(), "openapi.headers.Authorization") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open with PET_TOKEN unset: %v", err)
	}
}

// Cancelling a call ends its request: the service sees its request's
// context end, and CallTool returns.
func TestCancel(t *testing.T) {
	started, gone := make(chan struct{}), make(chan struct{})
	srv, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(time.Minute):
		}
	}))
	ns := open(t, petstoreConfig(srv.URL))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := ns.CallTool(ctx, callOf("getPetById", `{"petId": 1}`))
		done <- err
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("CallTool after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("CallTool did not return after cancel")
	}
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the service's request did not end")
	}
}

// A redirect to another origin is not followed: the configured headers
// stay with the service.
func TestNoCrossOriginRedirect(t *testing.T) {
	other, otherRec := serve(t, newPetstore())
	srv, _ := serve(t, http.RedirectHandler(other.URL+"/api/v3/pet/1", http.StatusFound))
	cfg := petstoreConfig(srv.URL)
	cfg.Headers = map[string]string{"X-Api-Key": "k"}
	res := call(t, open(t, cfg), "getPetById", `{"petId": 1}`)
	if !res.IsError || !strings.Contains(text(res), "302") || otherRec.count() != 0 {
		t.Errorf("redirect: %+v, other host saw %d requests", res, otherRec.count())
	}
}

const dialect30 = `{"openapi": "3.0.3", "info": {"title": "d", "version": "1"}, "paths": {"/n": {"get": {"operationId": "getN",
  "parameters": [{"name": "n", "in": "query", "required": true, "schema": {"type": "integer", "minimum": 0, "exclusiveMinimum": true, "nullable": true}},
    {"name": "e", "in": "query", "schema": {"type": "string", "enum": ["a"], "nullable": true, "example": "a"}}],
  "responses": {"200": {"description": "ok"}}}}}}`

// OpenAPI 3.0's schema dialect is translated to 2020-12: nullable,
// boolean exclusiveMinimum, example.
func TestOpenAPI30Dialect(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "d.json")
	os.WriteFile(spec, []byte(dialect30), 0o600)
	ts := tools(t, open(t, openapi.Config{Server: "d", Spec: spec, BaseURL: "http://127.0.0.1:1"}))
	s := compileSchema(t, "getN", ts["getN"].InputSchema)
	for args, ok := range map[string]bool{`{"n": 1}`: true, `{"n": null}`: true, `{"n": 0}`: false, `{"n": 1, "e": null}`: true, `{"n": 1, "e": "b"}`: false} {
		if valid(t, s, args) != ok {
			t.Errorf("getN %s: valid = %v, want %v (schema %s)", args, !ok, ok, ts["getN"].InputSchema)
		}
	}
	if !strings.Contains(string(ts["getN"].InputSchema), `"examples":["a"]`) {
		t.Errorf("example not carried as examples: %s", ts["getN"].InputSchema)
	}
}

// External $refs: a file spec's to files beside it are read (and
// internalized into $defs); a URL spec's to a local file are refused.
func TestExternalRefs(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pet.yaml"), []byte("Pet:\n  type: object\n  required: [name]\n  properties:\n    name: {type: string}\n"), 0o600)
	spec := `{"openapi": "3.1.0", "info": {"title": "x", "version": "1"}, "paths": {"/p": {"get": {"operationId": "getP",
		"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "REF"}}}}}}}}}`
	os.WriteFile(filepath.Join(dir, "spec.json"), []byte(strings.Replace(spec, "REF", "pet.yaml#/Pet", 1)), 0o600)
	ts := tools(t, open(t, openapi.Config{Server: "x", Spec: filepath.Join(dir, "spec.json"), BaseURL: "http://127.0.0.1:1"}))
	out := compileSchema(t, "getP", ts["getP"].OutputSchema)
	if !valid(t, out, `{"name": "a"}`) || valid(t, out, `{}`) {
		t.Errorf("the external schema is lost: %s", ts["getP"].OutputSchema)
	}

	srv, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Replace(spec, "REF", "file://"+filepath.Join(dir, "pet.yaml")+"#/Pet", 1)))
	}))
	op, _ := openapi.New(openapi.Config{Server: "x", Spec: srv.URL + "/spec.json", BaseURL: "http://127.0.0.1:1"})
	if _, err := op.Open(t.Context(), scope); err == nil || !strings.Contains(err.Error(), "may not reference the file") {
		t.Errorf("a URL spec referencing a local file: %v", err)
	}
}
