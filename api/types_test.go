package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

const demoInstructions = "A demo server for testing mcpx: echo, add, sleep, progress, roots and failure tools."

// The server's instructions, from its child's initialize result, are in its
// tool listing, its OpenAPI documents and its declarations; the config's
// prelude heads its declarations and shows in its description.
func TestInstructionsAndTypes(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{
		"demo": `{"prelude": "Ids come from the pid tool.", "tags": ["demo"], "toolTags": {"echo": ["parrot"]}}`,
	})})

	var st wire.ServerTools
	if err := json.Unmarshal(d.TCP.Do(t, "GET", "/v1/servers/demo/tools", "").Bytes, &st); err != nil || st.Instructions != demoInstructions {
		t.Errorf("/v1/servers/demo/tools: instructions %q (%v), want the child's", st.Instructions, err)
	}
	var si wire.Server
	if err := json.Unmarshal(d.TCP.Do(t, "GET", "/v1/servers/demo", "").Bytes, &si); err != nil ||
		si.Prelude != "Ids come from the pid tool." || len(si.ToolTags["echo"]) != 1 {
		t.Errorf("/v1/servers/demo: %+v (%v), want the prelude and tool tags", si, err)
	}
	for _, path := range []string{"/v1/servers/demo/openapi.json", "/v1/openapi.json"} {
		doc := string(d.TCP.Do(t, "GET", path, "").Bytes)
		if !strings.Contains(strings.ReplaceAll(doc, `": "`, `":"`), `"x-mcp-instructions":"`+demoInstructions+`"`) {
			t.Errorf("%s lacks the instructions as x-mcp-instructions:\n%.1500s", path, doc)
		}
	}
	// Config tags are search tags: the server's for every tool, a tool's own.
	var hits wire.ToolList
	json.Unmarshal(d.TCP.Do(t, "GET", "/v1/tools?tag=parrot", "").Bytes, &hits)
	if len(hits.Tools) != 1 || !strings.Contains(string(hits.Tools[0]), `"name":"echo"`) {
		t.Errorf("?tag=parrot: %s, want echo alone", hits.Tools)
	}
	json.Unmarshal(d.TCP.Do(t, "GET", "/v1/tools?tag=demo", "").Bytes, &hits)
	if len(hits.Tools) != 16 {
		t.Errorf("?tag=demo: %d tools, want all 16", len(hits.Tools))
	}

	all := d.TCP.Do(t, "GET", "/v1/types?server=demo", "")
	src := string(all.Bytes)
	if all.StatusCode != 200 || !strings.HasPrefix(all.Header.Get("Content-Type"), wire.MediaTypeScript) ||
		!strings.Contains(src, "\n// Ids come from the pid tool.\n/** "+demoInstructions+" */\nexport namespace demo {\n") ||
		!strings.Contains(src, "export type AddInput") {
		t.Errorf("/v1/types?server=demo: %d %q:\n%s", all.StatusCode, all.Header.Get("Content-Type"), src)
	}
	one := string(d.TCP.Do(t, "GET", "/v1/types?server=demo&tool=echo&instructions=false", "").Bytes)
	if !strings.Contains(one, "// Ids come from the pid tool.\nexport namespace demo {\n") || strings.Contains(one, demoInstructions) ||
		!strings.Contains(one, "export type EchoInput") || strings.Contains(one, "AddInput") {
		t.Errorf("/v1/types?server=demo&tool=echo&instructions=false:\n%s", one)
	}
	if p := d.TCP.Do(t, "GET", "/v1/types?server=demo&tool=ecoh", "").Problem(t); p.Kind() != wire.KindNotFound ||
		p.Field != "tool" || !strings.Contains(p.Detail, `no tool "ecoh"`) || !strings.Contains(p.Detail, `did you mean "echo"?`) {
		t.Errorf("an unknown tool: %+v", p)
	}
	if p := d.TCP.Do(t, "GET", "/v1/types?server=nope", "").Problem(t); p.Kind() != wire.KindNotFound {
		t.Errorf("an unknown server: %+v", p)
	}
	if p := d.TCP.Do(t, "GET", "/v1/types?server=demo&instructions=maybe", "").Problem(t); p.Kind() != wire.KindBadRequest ||
		p.Field != "instructions" {
		t.Errorf("instructions=maybe: %+v", p)
	}
}
