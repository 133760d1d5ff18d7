package client

import (
	"slices"
	"testing"
)

// TestWithRequestMetaFast: the one-allocation path gives what setting each
// member in turn gives, for params with and without a _meta of their own.
func TestWithRequestMetaFast(t *testing.T) {
	meta := [][2][]byte{
		{[]byte(MetaProtocolVersion), []byte(`"2026-07-28"`)},
		{[]byte(MetaClientInfo), []byte(`{"name":"mcpx","version":"1"}`)},
		{[]byte(MetaClientCapabilities), []byte(`{"elicitation":{}}`)},
	}
	slow := func(params []byte) []byte {
		m := []byte("{}")
		if v := member(params, `"_meta"`); v != nil && v[0] == '{' {
			m = v
		}
		var err error
		for _, kv := range slices.Backward(meta) {
			if m, err = setMember(m, string(kv[0]), kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		out, err := setMember(params, "_meta", m)
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
