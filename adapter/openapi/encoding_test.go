package openapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/adapter/openapi"
)

func encodingService(t *testing.T) (*recorder, map[string]string) {
	t.Helper()
	srv, rec := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			w.Write([]byte(`{"name": "made"}`))
		case r.URL.Path == "/v1/raw":
			writeJSON(w, 200, []any{1, "two"})
		case strings.HasPrefix(r.URL.Path, "/styles/"):
			w.WriteHeader(204)
		default:
			writeJSON(w, 200, map[string]any{})
		}
	}))
	return rec, map[string]string{"base": srv.URL + "/v1"}
}

// Requests on the wire: path templating with RFC 3986 escaping, every
// query style with explode on and off, deepObject (nested), a JSON content
// parameter, header and cookie parameters, nested bodies, numbers in plain
// decimal.
func TestEncodingOnTheWire(t *testing.T) {
	rec, env := encodingService(t)
	ns := open(t, openapi.Config{Server: "enc", Spec: "testdata/encoding.yaml", BaseURL: env["base"]})
	cases := []struct {
		tool, args string
		uri        string
		check      func(recorded) string
	}{
		{"getItem", `{"id": "a/b?c d#%é"}`, "/v1/items/a%2Fb%3Fc%20d%23%25%C3%A9", nil},
		{"getItem", `{"id": "x", "q": "&=+ ?/[]"}`, "/v1/items/x?q=%26%3D%2B%20%3F%2F%5B%5D", nil},
		{"getItem", `{"id": "x", "reserved": "/a?b=c&d"}`, "/v1/items/x?reserved=/a?b=c&d", nil},
		{"getItem", `{"id": "x", "tags": ["a b", "c,d"]}`, "/v1/items/x?tags=a%20b&tags=c%2Cd", nil},
		{"getItem", `{"id": "x", "ids": [1, 2e3, 3]}`, "/v1/items/x?ids=1,2000,3", nil},
		{"getItem", `{"id": "x", "spaced": ["a", "b c"]}`, "/v1/items/x?spaced=a%20b%20c", nil},
		{"getItem", `{"id": "x", "piped": ["a", "b|c"]}`, "/v1/items/x?piped=a%7Cb%7Cc", nil},
		{"getItem", `{"id": "x", "filter": {"color": "r&d", "size": {"min": 1}}}`, "/v1/items/x?filter[color]=r%26d&filter[size][min]=1", nil},
		{"getItem", `{"id": "x", "point": {"y": 2, "x": 1.5}}`, "/v1/items/x?y=2&x=1.5", nil},
		{"getItem", `{"id": "x", "box": {"w": 1, "h": "a b"}}`, "/v1/items/x?box=w,1,h,a%20b", nil},
		{"getItem", `{"id": "x", "json": {"a": [1, "b"]}}`, "/v1/items/x?json=%7B%22a%22%3A%5B1%2C%22b%22%5D%7D", nil},
		{"getItem", `{"id": "x", "X-Ids": [1, 2], "session": "s 1"}`, "/v1/items/x", func(r recorded) string {
			if r.Header.Get("X-Ids") != "1,2" || r.Header.Get("Cookie") != "session=s%201" {
				return "X-Ids " + r.Header.Get("X-Ids") + ", Cookie " + r.Header.Get("Cookie")
			}
			return ""
		}},
		{"clash", `{"path.id": 5, "query.id": 6, "query.body": "b", "body": {"name": "root", "value": null, "children": [{"name": "leaf", "value": 1.25, "children": []}]}}`,
			"/v1/clash/5?id=6&body=b", func(r recorded) string {
				if r.Body != `{"name":"root","value":null,"children":[{"name":"leaf","value":1.25,"children":[]}]}` || r.Header.Get("Content-Type") != "application/json" {
					return r.Header.Get("Content-Type") + " " + r.Body
				}
				return ""
			}},
		{"get_styles_label_matrix_exploded", `{"label": ["a", "b/c"], "matrix": ["x", "y"], "exploded": {"k": "v w", "n": 2}}`,
			"/v1/styles/.a,b%2Fc/;matrix=x,y/;k=v%20w;n=2", nil},
	}
	for _, c := range cases {
		res := call(t, ns, c.tool, c.args)
		if res.IsError {
			t.Errorf("%s(%s): %s", c.tool, c.args, text(res))
			continue
		}
		r := rec.last(t)
		if r.RequestURI != c.uri {
			t.Errorf("%s(%s):\n sent %s\n want %s", c.tool, c.args, r.RequestURI, c.uri)
		}
		if c.check != nil {
			if msg := c.check(r); msg != "" {
				t.Errorf("%s(%s): %s", c.tool, c.args, msg)
			}
		}
	}
	// A JSON array with no schema is structured as {"result": …}.
	if res := call(t, ns, "listRaw", `{}`); string(res.StructuredContent) != `{"result":[1,"two"]}` || text(res) != `[1,"two"]` {
		t.Errorf("listRaw: %+v", res)
	}
	if res := call(t, ns, "clash", `{"path.id": 5, "body": {"name": "n"}}`); string(res.StructuredContent) != `{"name":"made"}` {
		t.Errorf("clash answer: %+v", res)
	}
}

// Names: operationIds that fit stay, others are rewritten, collisions get
// a suffix; parameter names that clash are kept apart; a recursive schema
// is one $defs member referencing itself.
func TestEncodingTools(t *testing.T) {
	ts := tools(t, open(t, openapi.Config{Server: "enc", Spec: "testdata/encoding.yaml", BaseURL: "http://127.0.0.1:1"}))
	got := slices.Sorted(mapsKeys(ts))
	if want := []string{"clash", "getItem", "get_items", "get_items_2", "get_styles_label_matrix_exploded", "listRaw"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	var in struct {
		Properties map[string]json.RawMessage
		Required   []string
		Defs       map[string]json.RawMessage `json:"$defs"`
	}
	json.Unmarshal(ts["clash"].InputSchema, &in)
	if got := slices.Sorted(mapsKeys(in.Properties)); !slices.Equal(got, []string{"body", "path.id", "query.body", "query.id"}) {
		t.Errorf("clash properties %v", got)
	}
	if !slices.Equal(in.Required, []string{"path.id", "body"}) {
		t.Errorf("clash required %v", in.Required)
	}
	if string(in.Defs["Node"]) == "" || !strings.Contains(string(in.Defs["Node"]), `"$ref":"#/$defs/Node"`) {
		t.Errorf("Node not recursive in $defs: %s", ts["clash"].InputSchema)
	}
	s := compileSchema(t, "clash", ts["clash"].InputSchema)
	for args, ok := range map[string]bool{
		`{"path.id": 1, "body": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}}`: true,
		`{"path.id": 1, "body": {"name": "a", "children": [{"name": "b", "children": [{"value": 1}]}]}}`:  false,
		`{"path.id": 1, "body": {"name": "a", "value": "x"}}`:                                             false,
	} {
		if valid(t, s, args) != ok {
			t.Errorf("clash %s: valid = %v, want %v", args, !ok, ok)
		}
	}
	if ts["get_styles_label_matrix_exploded"].Description != "path styles" {
		t.Errorf("description %q", ts["get_styles_label_matrix_exploded"].Description)
	}
}

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, c := range []struct{ id, method, path, want string }{
		{"listPets", "GET", "/pets", "listPets"},
		{"pets.list", "GET", "/pets", "pets_list"},
		{"", "GET", "/pets/{petId}", "get_pets_petId"},
		{"!!", "DELETE", "/a b/{c}", "delete_a_b_c"},
		{"Über/größe", "GET", "/", "ber_gr_e"},
		{long, "GET", "/", long[:55] + "_" + "0d3ab5bb"},
	} {
		got := openapi.ToolName(c.id, c.method, c.path)
		if c.id == long {
			if len(got) != 64 || !strings.HasPrefix(got, long[:55]+"_") {
				t.Errorf("ToolName(%q) = %q, want 55 x's and a hash", c.id, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("ToolName(%q, %s %s) = %q, want %q", c.id, c.method, c.path, got, c.want)
		}
	}
}
