package client

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var wireSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\"}b"}]}}`,
	`{"jsonrpc":"2.0","id":"x","method":"roots/list","params":{}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":0.5}}`,
	`{"id":null,"error":{"code":-32700,"message":"Parse error"}}`,
	` { "id" : 2 , "result" : [ 1 , true , null , -1.5e3 ] } `,
	`{"id":1,"id":2,"result":{}}`,
	`{"_meta":{"a":1},"_meta":{"b":2}}`,
	`{}`,
	`[]`,
	`"str"`,
}

// FuzzWithProgressToken checks that the token lands in _meta and nothing
// else changes.
func FuzzWithProgressToken(f *testing.F) {
	for _, s := range wireSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		var before map[string]any
		if !json.Valid(params) || json.Unmarshal(params, &before) != nil || before == nil {
			return
		}
		out, err := withProgressToken(params, 42)
		if err != nil {
			t.Fatalf("withProgressToken(%s): %v", params, err)
		}
		var after map[string]any
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("withProgressToken(%s) = %s: invalid JSON: %v", params, out, err)
		}
		meta, _ := after["_meta"].(map[string]any)
		if meta["progressToken"] != float64(42) {
			t.Fatalf("withProgressToken(%s) = %s: no token", params, out)
		}
		delete(meta, "progressToken")
		if old, ok := before["_meta"].(map[string]any); ok {
			if d := cmp.Diff(old, meta); d != "" {
				t.Errorf("_meta changed (-before +after):\n%s", d)
			}
		}
		delete(before, "_meta")
		delete(after, "_meta")
		if d := cmp.Diff(before, after); d != "" {
			t.Errorf("params changed (-before +after):\n%s", d)
		}
	})
}
