package openapi_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/wire"
)

// fidelity cases: a tool schema and sample arguments, some valid and some
// not. The test asks a real validator for each sample's verdict against the
// original schema and against the request schema of the emitted document.
var fidelity = []struct {
	name    string
	schema  string
	samples []string
}{
	{"recursive-defs", `{
		"$defs": {"node": {"type": "object", "properties": {
			"value": {"type": "integer"},
			"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
			"required": ["value"], "additionalProperties": false}},
		"type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}, "required": ["root"]}`,
		[]string{
			`{"root": {"value": 1}}`,
			`{"root": {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}}`,
			`{"root": {"value": 1, "children": [{"value": 2, "children": [{"value": "x"}]}]}}`,
			`{"root": {"value": 1, "children": [{"value": 2, "extra": true}]}}`,
			`{"root": {}}`, `{}`,
		}},
	{"recursive-root", `{"type": "object", "properties": {"name": {"type": "string"}, "sub": {"$ref": "#"}}, "required": ["name"]}`,
		[]string{`{"name": "a"}`, `{"name": "a", "sub": {"name": "b", "sub": {"name": "c"}}}`, `{"name": "a", "sub": {"sub": {"name": "c"}}}`, `{"name": 1}`}},
	{"root-ref-with-siblings", `{
		"$ref": "#/$defs/base", "properties": {"extra": {"type": "boolean", "default": false}}, "required": ["extra"],
		"$defs": {"base": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid", "description": "an id"}}, "required": ["id"]}}}`,
		[]string{`{"id": "x", "extra": true}`, `{"id": "x"}`, `{"extra": true}`, `{"id": 5, "extra": false}`, `{"id": "x", "extra": "no"}`}},
	{"oneOf-const-enum", `{"type": "object", "properties": {
		"shape": {"oneOf": [
			{"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0}}, "required": ["kind", "r"]},
			{"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number", "exclusiveMinimum": 0}}, "required": ["kind", "side"]}]},
		"color": {"enum": ["red", "green", null]},
		"mode": {"anyOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "integer"}]},
		"both": {"allOf": [{"minLength": 2}, {"maxLength": 4}], "type": "string"}},
		"required": ["shape"]}`,
		[]string{
			`{"shape": {"kind": "circle", "r": 1}}`, `{"shape": {"kind": "square", "side": 2}, "color": null}`,
			`{"shape": {"kind": "square", "side": 0}}`, `{"shape": {"kind": "circle", "r": 1, "side": 1}, "color": "blue"}`,
			`{"shape": {"kind": "triangle"}}`, `{"shape": {"kind": "circle", "r": 1}, "mode": "abc"}`,
			`{"shape": {"kind": "circle", "r": 1}, "mode": "ABC"}`, `{"shape": {"kind": "circle", "r": 1}, "both": "abcde"}`,
			`{"shape": {"kind": "circle", "r": 1}, "both": "abc"}`,
		}},
	{"nested-arrays-additionalProperties", `{"type": "object", "properties": {
		"matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}, "minItems": 2}},
		"labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
		"pairs": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}},
		"additionalProperties": false}`,
		[]string{
			`{"matrix": [[1, 2], [3, 4, 5]]}`, `{"matrix": [[1]]}`, `{"matrix": [[1, "x"]]}`,
			`{"labels": {"a": "abc"}}`, `{"labels": {"a": "abcd"}}`, `{"other": 1}`,
			`{"pairs": ["a", 1]}`, `{"pairs": ["a", 1, 2]}`, `{"pairs": [1]}`,
		}},
	{"draft-07", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
		"definitions": {"pos": {"type": "integer", "minimum": 1}},
		"properties": {
			"pair": {"type": "array", "items": [{"type": "string"}, {"$ref": "#/definitions/pos"}], "additionalItems": false},
			"n": {"$ref": "#/definitions/pos", "maximum": 3, "description": "siblings of $ref are ignored in draft-07"}},
		"dependencies": {"a": ["b"], "c": {"required": ["d"]}}}`,
		[]string{
			`{"pair": ["x", 2]}`, `{"pair": ["x", 0]}`, `{"pair": ["x", 2, 3]}`, `{"n": 5}`, `{"n": 0}`,
			`{"a": 1, "b": 2}`, `{"a": 1}`, `{"c": 1, "d": 1}`, `{"c": 1}`,
		}},
	{"draft-04-exclusive", `{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {
		"x": {"type": "number", "maximum": 10, "exclusiveMaximum": true, "minimum": 0, "exclusiveMinimum": false}}}`,
		[]string{`{"x": 9}`, `{"x": 10}`, `{"x": 0}`, `{"x": -1}`}},
	{"anchor-and-pointer", `{"type": "object", "$defs": {"s": {"$anchor": "str", "type": "string", "minLength": 1}},
		"properties": {"a": {"$ref": "#str"}, "b": {"type": "integer", "multipleOf": 3}, "c": {"$ref": "#/properties/b"}}}`,
		[]string{`{"a": "x", "b": 3, "c": 6}`, `{"a": ""}`, `{"c": 4}`, `{"b": 4}`}},
	{"unknown-keywords-and-booleans", `{"type": "object", "errorMessage": "nope", "x-ui": {"widget": "text"},
		"properties": {"any": true, "none": false, "s": {"type": "string", "examples": ["a"], "deprecated": true}}}`,
		[]string{`{"any": [1]}`, `{"none": 1}`, `{"s": "a"}`, `{"s": 1}`}},
}

// compile compiles the schema at loc of the resource doc.
func compile(t *testing.T, doc any, loc string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	base, _, _ := strings.Cut(loc, "#")
	if err := c.AddResource(base, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		t.Fatalf("compiling %s: %v", loc, err)
	}
	return s
}

func unmarshal(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// requestSchemaLoc is the location of a tool's request schema in a
// document fetched from base.
func requestSchemaLoc(base, server, tool string) string {
	rt, _ := wire.Lookup(wire.OpCallTool)
	path := strings.ReplaceAll(strings.ReplaceAll(rt.Path(server, tool), "~", "~0"), "/", "~1")
	ptr := "/paths/" + path + "/post/requestBody/content/application~1json/schema"
	return base + "#" + (&url.URL{Fragment: ptr}).EscapedFragment()
}

// toolsJSON makes a tools/list array of tools named by their input schema.
func toolsJSON(t *testing.T, tools ...map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Arguments valid against a tool's schema are valid against the emitted
// request schema, resolved inside the emitted document, and invalid ones
// invalid: the schema's meaning is carried over, $refs, recursion, drafts
// and all.
func TestSchemaFidelity(t *testing.T) {
	var tools []map[string]any
	for _, f := range fidelity {
		tools = append(tools, map[string]any{"name": f.name, "inputSchema": json.RawMessage(f.schema)})
	}
	docJSON, err := openapi.ServerDocument(openapi.Options{Version: "test"}, openapi.Server{Name: "fid", Tools: toolsJSON(t, tools...)})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(docJSON, []byte(`"x-mcpx-schema-error"`)) {
		t.Fatalf("a fidelity schema was not carried over:\n%s", docJSON)
	}
	validateKin(t, docJSON)
	doc := unmarshal(t, string(docJSON))
	for _, f := range fidelity {
		t.Run(f.name, func(t *testing.T) {
			orig := compile(t, unmarshal(t, f.schema), "mem:///tool.json")
			emitted := compile(t, doc, requestSchemaLoc("mem:///doc.json", "fid", f.name))
			verdicts := map[bool]int{}
			for _, s := range f.samples {
				v := unmarshal(t, s)
				want := orig.Validate(v) == nil
				got := emitted.Validate(v) == nil
				verdicts[want]++
				if got != want {
					t.Errorf("%s: valid against the tool's schema: %v; against the document's: %v", s, want, got)
				}
			}
			if verdicts[true] == 0 || verdicts[false] == 0 {
				t.Errorf("the samples must include valid and invalid arguments; verdicts %v", verdicts)
			}
		})
	}
}

// The fidelity check can fail: the emitted document with a component's
// required list dropped accepts arguments the tool's schema refuses.
func TestSchemaFidelityCatchesLoss(t *testing.T) {
	f := fidelity[0]
	docJSON, err := openapi.ServerDocument(openapi.Options{}, openapi.Server{Name: "fid",
		Tools: toolsJSON(t, map[string]any{"name": f.name, "inputSchema": json.RawMessage(f.schema)})})
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(docJSON, &d); err != nil {
		t.Fatal(err)
	}
	node := d["components"].(map[string]any)["schemas"].(map[string]any)["fid.recursive-defs.input.node"]
	if node == nil {
		t.Fatalf("no component for $defs/node:\n%s", docJSON)
	}
	delete(node.(map[string]any), "required")
	broken, _ := json.Marshal(d)
	orig := compile(t, unmarshal(t, f.schema), "mem:///tool.json")
	emitted := compile(t, unmarshal(t, string(broken)), requestSchemaLoc("mem:///doc.json", "fid", f.name))
	sample := unmarshal(t, `{"root": {}}`)
	if (orig.Validate(sample) == nil) == (emitted.Validate(sample) == nil) {
		t.Error("dropping required from the emitted schema changed no verdict")
	}
}
