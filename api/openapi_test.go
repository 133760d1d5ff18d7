package api_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/openapi"
)

// /openapi.json serves the generated document, compressed like every JSON
// answer, and only to authenticated callers.
func TestServeOpenAPI(t *testing.T) {
	d := apitest.Start(t, apitest.Options{})
	want, err := openapi.Broker(openapi.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // built once, the same bytes every time
		req, _ := http.NewRequestWithContext(t.Context(), "GET", d.Unix.Base+"/openapi.json", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := d.Unix.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, Content-Encoding %q, Content-Type %q", resp.StatusCode,
				resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Type"))
		}
		gr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(gr)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("served %d bytes, not the generated document (%d bytes)", len(got), len(want))
		}
	}
	r := d.TCP.Do(t, "GET", "/openapi.json", "", "Authorization", "Bearer wrong")
	if p := r.Problem(t); p.Status != 401 {
		t.Errorf("TCP with a wrong token: %+v", p)
	}
}

// Real answers of a real child through the real daemon conform to the
// schemas the document gives their operations: the reflected wire documents
// and the MCP types transcribed from the specification.
func TestAnswersMatchOpenAPISchemas(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	spec := brokerSpec(t)
	cwd := cwdHeader(t.TempDir())
	for _, c := range []struct {
		method, path, body, schema string
	}{
		{"GET", "/v1/whoami", "", "Whoami"},
		{"GET", "/v1/servers", "", "ServerList"},
		{"GET", "/v1/servers/demo/tools", "", "ServerTools"},
		{"GET", "/v1/tools", "", "ToolList"},
		{"POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`, "MCPCallToolResult"},
		{"GET", "/v1/servers/demo/resources", "", "ResourceList"},
		{"GET", "/v1/servers/demo/resources/read?uri=demo://readme", "", "MCPReadResourceResult"},
		{"GET", "/v1/servers/demo/prompts", "", "PromptList"},
		{"POST", "/v1/servers/demo/prompts/greet", `{"name":"x"}`, "MCPGetPromptResult"},
		{"GET", "/v1/instances", "", "InstanceList"},
		{"GET", "/v1/servers/nope", "", "Problem"},
	} {
		r := d.Unix.Do(t, c.method, c.path, c.body, cwd...)
		var v any
		if err := json.Unmarshal(r.Bytes, &v); err != nil {
			t.Fatalf("%s %s: %v: %s", c.method, c.path, err, r.Bytes)
		}
		s := spec.Components.Schemas[c.schema]
		if s == nil {
			t.Fatalf("no schema %s", c.schema)
		}
		if err := s.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s %s: the answer does not match %s: %v\n%s", c.method, c.path, c.schema, err, r.Bytes)
		}
		// The check can fail: the same answer without a required member.
		if m, ok := v.(map[string]any); ok && len(s.Value.Required) > 0 {
			delete(m, s.Value.Required[0])
			if s.Value.VisitJSON(m, openapi3.EnableJSONSchema2020()) == nil {
				t.Errorf("%s without %q still matches %s", c.path, s.Value.Required[0], c.schema)
			}
		}
	}
}
