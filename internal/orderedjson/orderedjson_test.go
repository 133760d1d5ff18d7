package orderedjson_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/orderedjson"
	"mcpx.dev/mcpx/internal/testing/deptest"
)

func TestDeps(t *testing.T) {
	deptest.Rules{StdlibOnly: "a leaf under the TypeScript generator and the catalog"}.Check(t)
}

// TestDecodeKeepsOrder: members stay in document order, a repeated key
// keeps its first place and its last value, numbers keep their text, and
// Compact writes it all back in that order.
func TestDecodeKeepsOrder(t *testing.T) {
	v, err := orderedjson.Decode([]byte(`{"z": 1.50, "a": {"y": [true, null, "s"], "b": {}}, "z": 2, "m": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*orderedjson.Object)
	if !slices.Equal(o.Keys, []string{"z", "a", "m"}) {
		t.Errorf("keys %q, want z a m", o.Keys)
	}
	if z, _ := o.Get("z"); z != json.Number("2") {
		t.Errorf("z = %#v, want the last value, 2", z)
	}
	if a := o.Obj("a"); a == nil || !slices.Equal(a.Keys, []string{"y", "b"}) || a.Strings("y")[0] != "s" || !a.Has("b") {
		t.Errorf("a = %+v", a)
	}
	if s, ok := o.Str("m"); !ok || s != "x" {
		t.Errorf("m = %q, %v", s, ok)
	}
	if got, want := orderedjson.Compact(o), `{"z":2,"a":{"y":[true,null,"s"],"b":{}},"m":"x"}`; got != want {
		t.Errorf("Compact = %s, want %s", got, want)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"trailing data": `{} {}`,
		"not JSON":      `{"a":}`,
		"too deep":      strings.Repeat("[", orderedjson.MaxDepth+2) + strings.Repeat("]", orderedjson.MaxDepth+2),
	} {
		if _, err := orderedjson.Decode([]byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := orderedjson.Decode([]byte(strings.Repeat("[", orderedjson.MaxDepth) + strings.Repeat("]", orderedjson.MaxDepth))); err != nil {
		t.Errorf("MaxDepth levels: %v", err)
	}
}
