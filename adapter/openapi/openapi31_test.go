package openapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/adapter/openapi"
)

// An OpenAPI 3.1 document, read by kin-openapi: webhooks, $ref with
// siblings, boolean schemas, const, prefixItems, type arrays, $defs inside
// a component and references into them, if/then, unevaluatedProperties.
// The tool schemas keep their meaning.
func TestOpenAPI31(t *testing.T) {
	doc := `{"openapi": "3.1.0", "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
 "info": {"title": "p", "version": "1", "summary": "s", "license": {"name": "MIT", "identifier": "MIT"}},
 "webhooks": {"ping": {"post": {"responses": {"200": {"description": "ok"}}}}},
 "paths": {"/a": {"post": {"operationId": "a",
   "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/T", "description": "sibling"}}}},
   "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {
     "any": true, "none": false, "c": {"const": 3}, "pi": {"type": "array", "prefixItems": [{"type": "string"}], "items": false},
     "deep": {"$ref": "#/components/schemas/T/$defs/Inner"}}}}}}}}}},
 "components": {"schemas": {"T": {"type": ["object", "null"], "$defs": {"Inner": {"type": "integer", "exclusiveMinimum": 0}},
   "properties": {"x": {"$ref": "#/components/schemas/T/$defs/Inner"}}, "unevaluatedProperties": false,
   "if": {"required": ["x"]}, "then": {"properties": {"x": {"minimum": 5}}}}}}}`
	spec := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(spec, []byte(doc), 0o600)
	ts := tools(t, open(t, openapi.Config{Server: "p", Spec: spec, BaseURL: "http://127.0.0.1:1"}))
	in := compileSchema(t, "in", ts["a"].InputSchema)
	for args, ok := range map[string]bool{`{"body": {"x": 6}}`: true, `{"body": null}`: true, `{"body": {"x": 3}}`: false,
		`{"body": {"x": 0}}`: false, `{"body": {"y": 1}}`: false} {
		if valid(t, in, args) != ok {
			t.Errorf("input %s: valid = %v, want %v (%s)", args, !ok, ok, ts["a"].InputSchema)
		}
	}
	out := compileSchema(t, "out", ts["a"].OutputSchema)
	for res, ok := range map[string]bool{`{"c": 3, "pi": ["s"], "any": [1], "deep": 1}`: true, `{"c": 4}`: false,
		`{"pi": ["s", 1]}`: false, `{"none": 1}`: false, `{"deep": 0}`: false} {
		if valid(t, out, res) != ok {
			t.Errorf("output %s: valid = %v, want %v (%s)", res, !ok, ok, ts["a"].OutputSchema)
		}
	}
	if !strings.Contains(string(ts["a"].InputSchema), `"description":"sibling"`) {
		t.Errorf("the $ref's sibling is lost: %s", ts["a"].InputSchema)
	}
}
