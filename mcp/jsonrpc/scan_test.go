package jsonrpc

import (
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	obj := []byte(` {"a": 1, "b\"c": {"x": [1, "}", {"y": null}]}, "d": "e\"f", "g": true } `)
	var keys, vals []string
	if err := Members(obj, func(k, v []byte) { keys = append(keys, string(k)); vals = append(vals, string(v)) }); err != nil {
		t.Fatal(err)
	}
	want := `"a"=1 "b\"c"={"x": [1, "}", {"y": null}]} "d"="e\"f" "g"=true`
	var got []string
	for i := range keys {
		got = append(got, keys[i]+"="+vals[i])
	}
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
	for _, bad := range []string{`null`, `[1]`, `"s"`, ``} {
		if err := Members([]byte(bad), func(k, v []byte) {}); err != ErrNotObject {
			t.Errorf("Members(%q) = %v, want ErrNotObject", bad, err)
		}
	}
	if v := Member(obj, `"d"`); string(v) != `"e\"f"` {
		t.Errorf("Member d = %s", v)
	}
	if s, ok := Unquote(Member(obj, `"d"`)); !ok || s != `e"f` {
		t.Errorf("Unquote = %q, %v", s, ok)
	}
}

func TestElements(t *testing.T) {
	var els []string
	if err := Elements([]byte(`[ {"a":[1,2]}, "x,y", 3 ]`), func(v []byte) { els = append(els, string(v)) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(els, "|") != `{"a":[1,2]}|"x,y"|3` {
		t.Errorf("elements %q", els)
	}
	if err := Elements([]byte("null"), func([]byte) { t.Error("an element of null") }); err != nil {
		t.Error(err)
	}
}
