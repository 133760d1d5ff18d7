package toolschema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/orderedjson"
	"mcpx.dev/mcpx/internal/toolschema"
)

func TestArguments(t *testing.T) {
	for _, tc := range []struct {
		schema   string
		required bool
		props    string // name, "?" when optional, space-separated
	}{
		{`{}`, false, ""},
		{`true`, false, ""},
		{`false`, true, ""},
		{`42`, true, ""},
		{`{"type":"object","properties":{"a":{},"b":{}},"required":["b"]}`, true, "a? b"},
		{`{"$ref":"#/$defs/X","$defs":{"X":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`, true, "name"},
		{`{"$ref":"#/definitions/X","definitions":{"X":{"$ref":"#"}}}`, false, ""}, // a cycle ends
		{`{"allOf":[{"properties":{"id":{}},"required":["id"]},{"properties":{"x":{}}}]}`, true, "id x?"},
		{`{"oneOf":[{"properties":{"kind":{},"a":{}},"required":["kind","a"]},{"properties":{"kind":{},"b":{}},"required":["kind"]}]}`, true, "kind a? b?"},
		{`{"anyOf":[{"properties":{"a":{}},"required":["a"]},{"properties":{"b":{}},"required":["b"]}]}`, true, "a? b?"},
		{`{"anyOf":[{"properties":{"a":{}},"required":["a"]},{"properties":{"b":{}}}]}`, false, "a? b?"},
		{`{"type":"string"}`, true, ""},
	} {
		v, err := orderedjson.Decode([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		a := toolschema.Arguments(v)
		var props []string
		for _, p := range a.Props {
			s := p.Name
			if !p.Required {
				s += "?"
			}
			props = append(props, s)
		}
		if a.Required != tc.required || strings.Join(props, " ") != tc.props {
			t.Errorf("%s: Required %v, props %q; want %v, %q", tc.schema, a.Required, strings.Join(props, " "), tc.required, tc.props)
		}
	}
}

func TestCheckOutput(t *testing.T) {
	for schema, ok := range map[string]bool{
		`{"type":"object"}`:          true,
		`{"type":"array"}`:           false,
		`{"type":["object","null"]}`: false,
		`{"properties":{}}`:          false,
		`[1]`:                        false,
	} {
		if err := toolschema.CheckOutput(json.RawMessage(schema)); (err == nil) != ok {
			t.Errorf("CheckOutput(%s) = %v, want ok %v", schema, err, ok)
		}
	}
}
