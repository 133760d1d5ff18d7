package jsonrpc_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

var tool = json.RawMessage(`{"name":"deploy","inputSchema":{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"dry":{"type":"boolean","x-mcp-header":"Dry"},
	"opts":{"type":"object","properties":{"zone":{"type":"integer","x-mcp-header":"Zone"}}},
	"plain":{"type":"string"}}}}`)

func TestSetHeaders(t *testing.T) {
	toolOf := func(name string) json.RawMessage {
		if name == "deploy" {
			return tool
		}
		return nil
	}
	for _, tc := range []struct {
		method, params string
		want           http.Header
	}{
		{"tools/call", `{"name":"deploy","arguments":{"region":"eu-west","dry":true,"opts":{"zone":3},"plain":"x"}}`,
			http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"deploy"}, "Mcp-Param-Region": {"eu-west"},
				"Mcp-Param-Dry": {"true"}, "Mcp-Param-Zone": {"3"}}},
		{"tools/call", `{"name":"deploy","arguments":{"region":" zürich","opts":{"zone":1.5}}}`,
			http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"deploy"}, "Mcp-Param-Region": {"=?base64?IHrDvHJpY2g=?="}}},
		{"tools/call", `{"name":"other","arguments":{"region":"eu"}}`,
			http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"other"}}},
		{"resources/read", `{"uri":"file:///a b"}`, http.Header{"Mcp-Method": {"resources/read"}, "Mcp-Name": {"file:///a b"}}},
		{"prompts/get", `{"name":"p"}`, http.Header{"Mcp-Method": {"prompts/get"}, "Mcp-Name": {"p"}}},
		{"notifications/cancelled", `{"requestId":1}`, http.Header{"Mcp-Method": {"notifications/cancelled"}}},
		{"", `{}`, http.Header{}},
	} {
		h := http.Header{}
		jsonrpc.SetHeaders(h, tc.method, json.RawMessage(tc.params), toolOf)
		if d := cmp.Diff(tc.want, h); d != "" {
			t.Errorf("%s %s: (-want +got)\n%s", tc.method, tc.params, d)
		}
	}
}

func TestHasParamHeaders(t *testing.T) {
	if !jsonrpc.HasParamHeaders(tool) {
		t.Error("a tool with x-mcp-header (nested too) is not annotated")
	}
	if jsonrpc.HasParamHeaders(json.RawMessage(`{"name":"x","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`)) {
		t.Error("a tool without x-mcp-header is annotated")
	}
}

// TestCheckParamHeaders: the invalid annotations of the conformance
// suite's http-invalid-tool-headers scenario (SEP-2243) are refused, each
// naming the property; valid ones pass.
func TestCheckParamHeaders(t *testing.T) {
	props := func(p string) json.RawMessage {
		return json.RawMessage(`{"name":"t","inputSchema":{"type":"object","properties":{` + p + `}}}`)
	}
	for _, ok := range []json.RawMessage{tool, props(`"a":{"type":"string"}`), props(`"a":{"type":["string","null"],"x-mcp-header":"A"}`),
		props(`"a":{"x-mcp-header":"A-b_c.d~1"}`), json.RawMessage(`{"name":"none"}`)} {
		if err := jsonrpc.CheckParamHeaders(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for name, bad := range map[string]json.RawMessage{
		"empty":         props(`"value":{"type":"string","x-mcp-header":""}`),
		"object":        props(`"value":{"type":"object","x-mcp-header":"Data"}`),
		"array":         props(`"value":{"type":"array","items":{"type":"string"},"x-mcp-header":"Items"}`),
		"null":          props(`"value":{"type":"null","x-mcp-header":"Nil"}`),
		"number":        props(`"value":{"type":"number","x-mcp-header":"Score"}`),
		"same case":     props(`"value":{"type":"string","x-mcp-header":"Region"},"value2":{"type":"string","x-mcp-header":"Region"}`),
		"other case":    props(`"value":{"type":"string","x-mcp-header":"MyField"},"value2":{"type":"string","x-mcp-header":"myfield"}`),
		"space":         props(`"value":{"type":"string","x-mcp-header":"My Region"}`),
		"colon":         props(`"value":{"type":"string","x-mcp-header":"Region:Primary"}`),
		"non-ascii":     props(`"value":{"type":"string","x-mcp-header":"Région"}`),
		"control":       props(`"value":{"type":"string","x-mcp-header":"Region\t1"}`),
		"nested number": props(`"o":{"type":"object","properties":{"value":{"type":"number","x-mcp-header":"N"}}}`),
	} {
		err := jsonrpc.CheckParamHeaders(bad)
		if err == nil || !strings.Contains(err.Error(), "value") {
			t.Errorf("%s: %v, want an error naming the property", name, err)
		}
	}
}
