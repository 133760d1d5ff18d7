package openapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/adapter/openapi"
	brokerdoc "mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/wire"
)

// mcpx importing itself: the broker's own OpenAPI 3.1 document, as the
// daemon serves it at /openapi.json (package openapi, from the route
// table), fetched by URL; its servers[] URL "/" resolves against the
// spec's. A service answering like the daemon checks the calls on the
// wire and the answers against the tools' output schemas.
func TestMcpxImportsItself(t *testing.T) {
	doc, err := brokerdoc.Broker(brokerdoc.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	list, _ := json.Marshal(wire.ServerList{Servers: []wire.Server{{Name: "demo", Transport: "stdio", Scope: "global", Sharing: "shared", Max: 1}}})
	srv, rec := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/openapi.json":
			w.Write(doc)
		case r.Method == "GET" && r.URL.Path == "/v1/servers":
			w.Write(list)
		case r.Method == "POST" && strings.HasPrefix(r.URL.Path, "/v1/servers/demo/tools/"):
			w.Write([]byte(`{"content": [{"type": "text", "text": "hi"}], "isError": false}`))
		default:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(404)
			w.Write([]byte(`{"type": "https://mcpx.dev/problems/unknown-server", "title": "unknown server", "status": 404}`))
		}
	}))
	ns := open(t, openapi.Config{Server: "self", Spec: srv.URL + "/openapi.json", Operations: []string{"listServers", "callTool"}})
	ts := tools(t, ns)
	if got := slices.Sorted(mapsKeys(ts)); !slices.Equal(got, []string{"callTool", "listServers"}) {
		t.Fatalf("tools %v", got)
	}
	var in struct {
		Properties map[string]json.RawMessage
		Required   []string
	}
	json.Unmarshal(ts["callTool"].InputSchema, &in)
	props := slices.Sorted(mapsKeys(in.Properties))
	for _, want := range []string{"server", "tool", "task", "body", "Mcpx-Client", "Mcpx-Cwd", "Mcpx-Session"} {
		if !slices.Contains(props, want) {
			t.Errorf("callTool input lacks %s: %v", want, props)
		}
	}
	if !slices.Equal(in.Required, []string{"server", "tool"}) {
		t.Errorf("callTool required %v", in.Required)
	}
	callIn := compileSchema(t, "callTool.input", ts["callTool"].InputSchema)
	if !valid(t, callIn, `{"server": "demo", "tool": "echo", "body": {"text": "hi"}}`) || valid(t, callIn, `{"server": "demo", "tool": "echo", "body": [1]}`) {
		t.Errorf("callTool input schema: %s", ts["callTool"].InputSchema)
	}
	if !strings.Contains(ts["listServers"].Description, "List the configured servers") {
		t.Errorf("listServers description %q", ts["listServers"].Description)
	}

	res := call(t, ns, "listServers", `{"Mcpx-Client": "openapitools-test"}`)
	if res.IsError || !strings.Contains(string(res.StructuredContent), `"name":"demo"`) {
		t.Fatalf("listServers: %+v", res)
	}
	if r := rec.last(t); r.RequestURI != "/v1/servers" || r.Header.Get("Mcpx-Client") != "openapitools-test" {
		t.Errorf("listServers sent %s, Mcpx-Client %q", r.RequestURI, r.Header.Get("Mcpx-Client"))
	}
	listOut := compileSchema(t, "listServers.output", ts["listServers"].OutputSchema)
	if !valid(t, listOut, string(res.StructuredContent)) || valid(t, listOut, `{"servers": [{"name": 1}]}`) {
		t.Errorf("listServers output schema does not type the answer: %s", ts["listServers"].OutputSchema)
	}

	res = call(t, ns, "callTool", `{"server": "demo", "tool": "a/b", "Mcpx-Cwd": "/src/x y", "body": {"text": "hi", "n": {"deep": [1, 2]}}}`)
	if res.IsError || !strings.Contains(string(res.StructuredContent), `"text":"hi"`) {
		t.Fatalf("callTool: %+v", res)
	}
	r := rec.last(t)
	if r.Method != "POST" || r.RequestURI != "/v1/servers/demo/tools/a%2Fb" || r.Body != `{"text":"hi","n":{"deep":[1,2]}}` || r.Header.Get("Mcpx-Cwd") != "/src/x y" {
		t.Errorf("callTool sent %s %s %s Mcpx-Cwd %q", r.Method, r.RequestURI, r.Body, r.Header.Get("Mcpx-Cwd"))
	}
	callOut := compileSchema(t, "callTool.output", ts["callTool"].OutputSchema)
	if !valid(t, callOut, string(res.StructuredContent)) || valid(t, callOut, `{"content": "x"}`) {
		t.Errorf("callTool output schema does not type the answer: %s", ts["callTool"].OutputSchema)
	}

	// Every operation of the document compiles into schemas that compile.
	all := tools(t, open(t, openapi.Config{Server: "self", Spec: srv.URL + "/openapi.json"}))
	if len(all) < 40 {
		t.Errorf("the whole document: %d tools", len(all))
	}
	for name, tool := range all {
		compileSchema(t, name+".input", tool.InputSchema)
		if tool.OutputSchema != nil {
			compileSchema(t, name+".output", tool.OutputSchema)
		}
	}

	res = call(t, ns, "callTool", `{"server": "nope", "tool": "x"}`)
	if !res.IsError || !strings.Contains(text(res), "HTTP 404 Not Found") || !strings.Contains(text(res), "unknown-server") {
		t.Errorf("callTool of an unknown server: %+v", res)
	}
}
