package wire_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/wire"
)

func TestRoutesTable(t *testing.T) {
	routes := wire.Routes()
	names := map[string]bool{}
	for _, r := range routes {
		if r.Method == "" || r.Pattern == "" || r.Name == "" || r.Summary == "" {
			t.Errorf("incomplete route %+v", r)
		}
		if names[r.Name] {
			t.Errorf("duplicate name %s", r.Name)
		}
		names[r.Name] = true
		outside := r.Pattern == "/healthz" || r.Pattern == "/openapi.json" ||
			r.Pattern == "/metrics" // where Prometheus scrapes by default
		if !outside && !strings.HasPrefix(r.Pattern, "/v1/") {
			t.Errorf("%s: pattern %s outside /v1", r.Name, r.Pattern)
		}
		if (r.Status == 204) != (r.Response == nil) || (r.Status != 200 && r.Status != 204) {
			t.Errorf("%s: status %d with response type %v", r.Name, r.Status, r.Response)
		}
		if r.Raw != (r.MCPResult != "") || r.Raw && r.Response != reflect.TypeFor[json.RawMessage]() {
			t.Errorf("%s: raw %v, MCP result %q, response %v", r.Name, r.Raw, r.MCPResult, r.Response)
		}
		if (r.Body == wire.BodyNone) != (r.Request == nil) {
			t.Errorf("%s: body %q with request type %v", r.Name, r.Body, r.Request)
		}
		if len(r.Problems) == 0 {
			t.Errorf("%s: no problems listed", r.Name)
		}
		for _, k := range r.Problems {
			if _, ok := wire.LookupProblemType(k); !ok {
				t.Errorf("%s: unknown problem kind %q", r.Name, k)
			}
		}
		if got, ok := wire.Lookup(r.Name); !ok || got.Pattern != r.Pattern {
			t.Errorf("Lookup(%s) = %+v, %v", r.Name, got, ok)
		}
	}
	for _, want := range []string{"GET /healthz", "GET /v1/whoami", "POST /v1/servers/{server}/tools/{tool}", "DELETE /v1/instances/{id}"} {
		if !slices.ContainsFunc(routes, func(r wire.Route) bool { return r.Method+" "+r.Pattern == want }) {
			t.Errorf("missing route %s", want)
		}
	}
	routes[0].Pattern = "changed"
	routes[1].Problems[0] = "changed"
	if wire.Routes()[0].Pattern == "changed" || wire.Routes()[1].Problems[0] == "changed" {
		t.Error("Routes returned the table itself")
	}
	if _, ok := wire.Lookup("nope"); ok {
		t.Error("Lookup found an unknown operation")
	}
}

func TestPath(t *testing.T) {
	rt, _ := wire.Lookup(wire.OpCallTool)
	if got, want := rt.Path("demo", "a/b c"), "/v1/servers/demo/tools/a%2Fb%20c"; got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	rt, _ = wire.Lookup(wire.OpReadResource)
	if got, want := rt.Path("demo"), "/v1/servers/demo/resources/read"; got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	for _, params := range [][]string{{"demo"}, {"demo", "echo", "x"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Path(%q) did not panic", params)
				}
			}()
			rt, _ := wire.Lookup(wire.OpCallTool)
			rt.Path(params...)
		}()
	}
}

func TestProblemTypes(t *testing.T) {
	seen := map[string]bool{}
	for _, pt := range wire.ProblemTypes() {
		if seen[pt.Kind] || pt.Title == "" || pt.Status < 400 {
			t.Errorf("problem type %+v: duplicate or incomplete", pt)
		}
		seen[pt.Kind] = true
	}
	p := &wire.Problem{Type: wire.ProblemTypeBase + wire.KindNotFound, Detail: "no server"}
	if p.Kind() != wire.KindNotFound || p.Error() != "no server" {
		t.Errorf("Kind %q, Error %q", p.Kind(), p.Error())
	}
	if p := (&wire.Problem{Type: "about:blank"}); p.Kind() != "about:blank" {
		t.Errorf("foreign type: Kind %q", p.Kind())
	}
}

func TestTagServer(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"name":"echo","description":"says it back"}`, `{"server":"demo","name":"echo","description":"says it back"}`},
		{` { "name" : "echo" } `, `{"server":"demo","name" : "echo" }`},
		{`{}`, `{"server":"demo"}`},
		{`{ }`, `{"server":"demo"}`},
		{`{"name":"x","description":"a server tool"}`, `{"server":"demo","name":"x","description":"a server tool"}`},
		{`{"name":"x","meta":{"server":"inner"}}`, `{"server":"demo","name":"x","meta":{"server":"inner"}}`},
		{`{"name":"x", "server": "own", "y": [1, 2]}`, `{"server":"demo","name":"x","y":[1, 2]}`},
		{`{"\u0073erver":"own","name":"x"}`, `{"server":"demo","name":"x"}`},
		{`[1]`, `[1]`},
		{`"s"`, `"s"`},
		{``, ``},
	}
	for _, tt := range tests {
		if got := string(wire.TagServer("demo", json.RawMessage(tt.in))); got != tt.want {
			t.Errorf("TagServer(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := string(wire.TagServer(`a"<b>`, json.RawMessage(`{}`))); got != `{"server":"a\"\u003cb\u003e"}` {
		t.Errorf("escaping: %s", got)
	}
}

// A tagged object is valid JSON whenever the tool was, and decodes to the
// tool's members with "server" set to the tag.
func FuzzTagServer(f *testing.F) {
	f.Add("demo", []byte(`{"name":"echo","server":"x"}`))
	f.Add("a\"b", []byte(` {"a": {"server": 1}} `))
	f.Add("", []byte(`{}`))
	f.Fuzz(func(t *testing.T, name string, tool []byte) {
		var want map[string]any
		if json.Unmarshal(tool, &want) != nil || want == nil {
			return
		}
		out := wire.TagServer(name, tool)
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("TagServer(%q, %s) = %s: %v", name, tool, out, err)
		}
		var tag string
		json.Unmarshal(mustMarshal(name), &tag) // invalid UTF-8 is replaced
		want["server"] = tag
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("TagServer(%q, %s) = %s, want the members of %v", name, tool, out, want)
		}
	})
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
