//lint:file-ignore SA1019 logging is what the MCP endpoint passes between its clients and children of the handshake era; the 2026-07-28 revision deprecates it with a twelve-month window.

package api_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	mcpxclient "mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/wire"
)

// server-everything's resource templates over REST: listed, a URI made
// from one read through the read route, its prompt's arguments and a
// template's variable completed, bad completion requests named.
func TestEverythingTemplatesAndCompletionREST(t *testing.T) {
	d := everythingDaemon(t, 0)
	cwd := cwdHeader(t.TempDir())

	var list wire.ResourceTemplateList
	d.Unix.Do(t, "GET", "/v1/servers/everything/resources/templates", "", cwd...).Decode(t, &list)
	var templates []struct {
		URITemplate string `json:"uriTemplate"`
	}
	json.Unmarshal(list.ResourceTemplates, &templates)
	var uris []string
	for _, tp := range templates {
		uris = append(uris, tp.URITemplate)
	}
	if list.Server != "everything" || !slices.Contains(uris, "demo://resource/dynamic/text/{resourceId}") {
		t.Fatalf("templates %s of %q, want demo://resource/dynamic/text/{resourceId}", list.ResourceTemplates, list.Server)
	}

	r := d.Unix.Do(t, "GET", "/v1/servers/everything/resources/read?uri=demo://resource/dynamic/text/7", "", cwd...)
	if r.StatusCode != 200 || !strings.Contains(string(r.Bytes), `"uri":"demo://resource/dynamic/text/7"`) || !strings.Contains(string(r.Bytes), `"text"`) {
		t.Errorf("reading a templated uri: %d %s", r.StatusCode, r.Bytes)
	}

	complete := func(body string) []string {
		t.Helper()
		r := d.Unix.Do(t, "POST", "/v1/servers/everything/complete", body, cwd...)
		if r.StatusCode != 200 {
			t.Fatalf("complete %s: %d %s", body, r.StatusCode, r.Bytes)
		}
		var res struct {
			Completion struct{ Values []string } `json:"completion"`
		}
		r.Decode(t, &res)
		return res.Completion.Values
	}
	if got := complete(`{"ref":{"type":"ref/prompt","name":"completable-prompt"},"argument":{"name":"department","value":"S"}}`); !slices.Equal(got, []string{"Sales", "Support"}) {
		t.Errorf("department completions %v, want [Sales Support]", got)
	}
	if got := complete(`{"ref":{"type":"ref/prompt","name":"completable-prompt"},"argument":{"name":"name","value":""},"context":{"arguments":{"department":"Engineering"}}}`); !slices.Equal(got, []string{"Alice", "Bob", "Charlie"}) {
		t.Errorf("name completions in Engineering %v, want [Alice Bob Charlie]", got)
	}
	if got := complete(`{"ref":{"type":"ref/resource","uri":"demo://resource/dynamic/text/{resourceId}"},"argument":{"name":"resourceId","value":"3"}}`); !slices.Equal(got, []string{"3"}) {
		t.Errorf("resourceId completions %v, want [3]", got)
	}

	// The answers match their schemas in the OpenAPI document.
	spec := brokerSpec(t)
	for _, c := range []struct{ method, path, body, schema string }{
		{"GET", "/v1/servers/everything/resources/templates", "", "ResourceTemplateList"},
		{"POST", "/v1/servers/everything/complete", `{"ref":{"type":"ref/prompt","name":"completable-prompt"},"argument":{"name":"department","value":""}}`, "MCPCompleteResult"},
	} {
		var v any
		json.Unmarshal(d.Unix.Do(t, c.method, c.path, c.body, cwd...).Bytes, &v)
		if err := spec.Components.Schemas[c.schema].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: the answer does not match %s: %v", c.path, c.schema, err)
		}
	}

	for _, tt := range []struct{ body, field, detail string }{
		{`{"ref":{"type":"ref/tool","name":"x"},"argument":{"name":"a","value":""}}`, "ref.type", `ref.type "ref/tool" is not ref/prompt or ref/resource`},
		{`{"ref":{"type":"ref/prompt"},"argument":{"name":"a","value":""}}`, "ref.name", "needs the prompt's name"},
		{`{"ref":{"type":"ref/prompt","name":"completable-promt"},"argument":{"name":"a","value":""}}`, "ref.name", `did you mean "completable-prompt"?`},
		{`{"ref":{"type":"ref/resource","uri":"demo://x"},"argument":{"value":""}}`, "argument.name", "has no name"},
	} {
		p := d.Unix.Do(t, "POST", "/v1/servers/everything/complete", tt.body, cwd...).Problem(t)
		if p.Field != tt.field || p.Server != "everything" || !strings.Contains(p.Detail, tt.detail) {
			t.Errorf("complete %s: problem %+v, want field %s and %q", tt.body, p, tt.field, tt.detail)
		}
	}
}

// logging/setLevel from a REST caller, and the instance's
// notifications/message on the call's stream, named by server; a bad level
// is refused naming the field.
func TestEverythingLogLevelAndMessagesREST(t *testing.T) {
	d := everythingDaemon(t, 0)
	cwd := t.TempDir()
	if p := d.Unix.Do(t, "POST", "/v1/servers/everything/logging", `{"level":"loud"}`, cwdHeader(cwd)...).Problem(t); p.Field != "level" || !strings.Contains(p.Detail, "debug, info") {
		t.Errorf("bad level: %+v", p)
	}
	if r := d.Unix.Do(t, "POST", "/v1/servers/everything/logging", `{"level":"debug"}`, cwdHeader(cwd)...); r.StatusCode != 204 {
		t.Fatalf("setLevel: %d %s", r.StatusCode, r.Bytes)
	}
	// toggle-simulated-logging sends one message at once, then one each 5 s.
	resp := streamRequest(t, t.Context(), d.Unix, "/v1/servers/everything/tools/toggle-simulated-logging", `{}`, cwd)
	var msgs []wire.LogMessage
	var names []string
	apitest.ReadEvents(t, resp.Body, func(ev apitest.Event) {
		names = append(names, ev.Name)
		if ev.Name == wire.StreamMessage {
			var m wire.LogMessage
			json.Unmarshal([]byte(ev.Data), &m)
			msgs = append(msgs, m)
		}
	})
	resp.Body.Close()
	if len(msgs) == 0 || msgs[0].Server != "everything" || !simulatedLog.Match(msgs[0].Data) ||
		!slices.Contains(wire.MCPLogLevels(), msgs[0].Level) || names[len(names)-1] != wire.StreamResult {
		t.Errorf("events %v, messages %+v; want a message event of server everything before the result", names, msgs)
	}
}

// A URL-mode elicitation over the REST stream: the input event carries
// mode, url and elicitationId; accept answers the child without content.
func TestEverythingURLElicitationREST(t *testing.T) {
	d := everythingDaemon(t, 0)
	c := mcpxclient.New(d.Sock, mcpxclient.Options{})
	var mu sync.Mutex
	var seen []wire.InputRequest
	res, err := c.Call(t.Context(), mcpxclient.Caller{Cwd: t.TempDir()}, "everything", "trigger-url-elicitation",
		json.RawMessage(`{"url":"https://example.com/consent","elicitationId":"el-1"}`), mcpxclient.CallOptions{
			OnInput: func(_ context.Context, in wire.InputRequest) (wire.InputAnswer, error) {
				mu.Lock()
				seen = append(seen, in)
				mu.Unlock()
				return wire.InputAnswer{Action: wire.ActionAccept}, nil
			}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0].Mode != wire.InputModeURL || seen[0].URL != "https://example.com/consent" || seen[0].ElicitationID != "el-1" {
		t.Fatalf("input requests %+v, want one url-mode request for https://example.com/consent (el-1)", seen)
	}
	if !strings.Contains(string(res), "User completed the URL elicitation flow") {
		t.Errorf("result %s, want the accept", res)
	}
}

// simulatedLog matches server-everything's simulated log messages
// ("Info-level message", "Alert level-message").
var simulatedLog = regexp.MustCompile(`level.message`)

// brokerSpec is the broker's OpenAPI document, loaded.
func brokerSpec(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi.Broker(openapi.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
