package toolschema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"mcpx.dev/mcpx/clientgen"
	"mcpx.dev/mcpx/clientgen/catalog"
	"mcpx.dev/mcpx/internal/toolschema"
	"mcpx.dev/mcpx/openapi"
)

// pointSchemas is one tool schema in three dialects: 2020-12, draft-07
// saying so, and draft-07 without $schema (as many servers write it).
var pointSchemas = map[string]string{
	"2020-12": `{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}},
		"properties":{"p":{"$ref":"#/$defs/P"},"pair":{"type":"array","prefixItems":[{"type":"string"},{"$ref":"#/$defs/P"}],"items":false,"minItems":1},
		"second":{"$ref":"#/properties/pair/prefixItems/1"}},"required":["p"],"dependentRequired":{"pair":["second"]}}`,
	"draft-07": `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"P":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}},
		"properties":{"p":{"$ref":"#/definitions/P"},"pair":{"type":"array","items":[{"type":"string"},{"$ref":"#/definitions/P"}],"additionalItems":false,"minItems":1},
		"second":{"$ref":"#/properties/pair/items/1"}},"required":["p"],"dependencies":{"pair":["second"]}}`,
	"draft-07 unsaid": `{"type":"object","definitions":{"P":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}},
		"properties":{"p":{"$ref":"#/definitions/P"},"pair":{"type":"array","items":[{"type":"string"},{"$ref":"#/definitions/P"}],"additionalItems":false,"minItems":1},
		"second":{"$ref":"#/properties/pair/items/1"}},"required":["p"],"dependencies":{"pair":["second"]}}`,
}

// surfaces renders a tool of schema as each reader of tool schemas shows
// it: the catalog's signature, the TypeScript client's types, the OpenAPI
// document's request body and components.
func surfaces(t *testing.T, schema string) map[string]string {
	t.Helper()
	out := map[string]string{}
	cat := catalog.New([]catalog.Tool{{Server: "d", Name: "t", InputSchema: json.RawMessage(schema)}}, 1000, nil)
	out["catalog"] = cat.String()
	ts, problems := clientgen.Compile([]clientgen.Tool{{Server: "d", Name: "t", InputSchema: json.RawMessage(schema)}})
	out["typescript"] = string(ts.Source)
	for _, p := range problems {
		out["typescript"] += "\nproblem: " + p.Message
	}
	tools, _ := json.Marshal([]map[string]any{{"name": "t", "inputSchema": json.RawMessage(schema)}})
	raw, err := openapi.ServerDocument(openapi.Options{}, openapi.Server{Name: "d", Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]struct{ RequestBody json.RawMessage } `json:"paths"`
		Components struct{ Schemas map[string]json.RawMessage }                `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(doc.Paths["/v1/servers/d/tools/t"]["post"].RequestBody)
	out["openapi body"] = string(body)
	for name, s := range doc.Components.Schemas {
		if strings.HasPrefix(name, "d.") {
			out["openapi "+name] = string(s)
		}
	}
	return out
}

// TestDialectsAgree: a draft-07 tool schema (definitions, tuple items,
// additionalItems, dependencies, a $ref into a tuple), said or unsaid,
// shows in the catalog, the TypeScript client and the OpenAPI document
// exactly as the same schema written in 2020-12.
func TestDialectsAgree(t *testing.T) {
	want := surfaces(t, pointSchemas["2020-12"])
	if sig := want["catalog"]; !strings.Contains(sig, "d.t({p: object, pair?: [string, any?], second?: object})") {
		t.Errorf("2020-12 catalog:\n%s", sig)
	}
	for _, dialect := range []string{"draft-07", "draft-07 unsaid"} {
		got := surfaces(t, pointSchemas[dialect])
		for surface, w := range want {
			if got[surface] != w {
				t.Errorf("%s, %s:\n%s\nwant (2020-12):\n%s", dialect, surface, got[surface], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: surfaces %v, want %v", dialect, len(got), len(want))
		}
	}
}

// TestNormalizeDraft4: draft-04's boolean exclusive bounds become numbers,
// its id an $id, and a $ref's siblings other than annotations go.
func TestNormalizeDraft4(t *testing.T) {
	got := string(toolschema.Normalize(json.RawMessage(`{"$schema":"http://json-schema.org/draft-04/schema#","id":"#top","type":"object",
		"properties":{"n":{"type":"number","maximum":3,"exclusiveMaximum":true,"minimum":0,"exclusiveMinimum":false},
		"r":{"$ref":"#/properties/n","description":"kept","type":"string"}}}`)))
	want := `{"$anchor":"top","type":"object","properties":{"n":{"type":"number","exclusiveMaximum":3,"minimum":0},"r":{"$ref":"#/properties/n","description":"kept"}}}`
	if got != want {
		t.Errorf("Normalize:\n%s\nwant\n%s", got, want)
	}
	for _, s := range []string{`{"type":"string", "items": {"type":"string"}}`, `{"properties":{"dependencies":{"type":"object"}}}`, `nope`} {
		if got := string(toolschema.Normalize(json.RawMessage(s))); got != s {
			t.Errorf("Normalize(%s) = %s, want it as it is", s, got)
		}
	}
}
