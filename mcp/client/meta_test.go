package client

import (
	"slices"
	"testing"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// TestWithRequestMetaFast: the one-allocation path gives what setting each
// member in turn gives, for params with and without a _meta of their own.
func TestWithRequestMetaFast(t *testing.T) {
	meta := [][2][]byte{
		{[]byte(jsonrpc.MetaProtocolVersion), []byte(`"2026-07-28"`)},
		{[]byte(jsonrpc.MetaClientInfo), []byte(`{"name":"mcpx","version":"1"}`)},
		{[]byte(jsonrpc.MetaClientCapabilities), []byte(`{"elicitation":{}}`)},
	}
	slow := func(params []byte) []byte {
		m := []byte("{}")
		if v := jsonrpc.Member(params, `"_meta"`); v != nil && v[0] == '{' {
			m = v
		}
		var err error
		for _, kv := range slices.Backward(meta) {
			if m, err = jsonrpc.SetMember(m, string(kv[0]), kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		out, err := jsonrpc.SetMember(params, "_meta", m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, p := range []string{
		`{"name":"echo","arguments":{"message":"hi"}}`,
		`{}`,
		`{ }`,
		`{"name":"x","_meta":{"progressToken":3}}`,
		`{"name":"x","_meta":{}}`,
		`{"name":"x","_meta":{ }}`,
		`{"name":"x","_meta":{"trace":"t1","io.modelcontextprotocol/clientInfo":{"name":"caller"}}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"old"},"name":"y"}`,
	} {
		got, err := withRequestMeta([]byte(p), meta)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if want := slow([]byte(p)); string(got) != string(want) {
			t.Errorf("withRequestMeta(%s)\n got %s\nwant %s", p, got, want)
		}
	}
}
