package clientgen

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestProducerHints: a required id names the tools that mention its noun
// and do not need it, as a guess; an optional id, a tool needing the id
// itself and another server's tools are left out.
func TestProducerHints(t *testing.T) {
	in := func(props string, req ...string) json.RawMessage {
		r, _ := json.Marshal(req)
		return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(r) + `}`)
	}
	tools := []Tool{
		{Server: "notion", Name: "get_page", InputSchema: in(`"pageId":{"type":"string"}`, "pageId")},
		{Server: "notion", Name: "update_page", InputSchema: in(`"pageId":{"type":"string"},"title":{"type":"string"}`, "pageId")},
		{Server: "notion", Name: "list_pages", InputSchema: in(`"query":{"type":"string"}`)},
		{Server: "notion", Name: "new_page", InputSchema: in(`"title":{"type":"string"}`, "title")},
		{Server: "notion", Name: "search", InputSchema: in(`"pageId":{"type":"string"}`)},
		{Server: "github", Name: "merge_pull_request", InputSchema: in(`"pullRequestId":{"type":"integer"}`, "pullRequestId")},
		{Server: "github", Name: "list_pull_requests", InputSchema: in(``)},
		{Server: "other", Name: "list_pages", InputSchema: in(``)},
	}
	f, _ := Compile(tools)
	src := string(f.Source)
	for _, want := range []string{
		`@see list_pages, new_page — a guess from names: tools of this server that mention "page" and do not need pageId`,
		`@see list_pull_requests — a guess from names: tools of this server that mention "pull request" and do not need pullRequestId`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("no hint %q in:\n%s", want, src)
		}
	}
	if strings.Count(src, "@see list_pages, new_page") != 2 {
		t.Errorf("want the page hint on get_page and update_page only:\n%s", src)
	}

	// Types of one tool still name producers from all of the server's.
	tf, _, found := Types(TypesOptions{Server: Server{Name: "notion"}, Tools: tools, Only: []string{"get_page"}})
	if !found || !strings.Contains(string(tf.Source), "@see list_pages, new_page") || strings.Contains(string(tf.Source), "NewPageInput") {
		t.Errorf("types of get_page only:\n%s", tf.Source)
	}
}

// TestTypesDepth: objects nested deeper than Depth are open objects that
// say so; shallower ones are written out.
func TestTypesDepth(t *testing.T) {
	tools := []Tool{{Server: "s", Name: "deep", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"string"}}}}}}}`)}}
	f, _, _ := Types(TypesOptions{Server: Server{Name: "s"}, Tools: tools, Depth: 1})
	src := string(f.Source)
	if !strings.Contains(src, "a?: {") || !strings.Contains(src, "b?: { [key: string]: unknown } /* an object nested deeper than --depth 1") || strings.Contains(src, "c?: string") {
		t.Errorf("depth 1:\n%s", src)
	}
	f, _, _ = Types(TypesOptions{Server: Server{Name: "s"}, Tools: tools})
	if !strings.Contains(string(f.Source), "c?: string") {
		t.Errorf("no depth:\n%s", f.Source)
	}
	if _, _, found := Types(TypesOptions{Server: Server{Name: "s"}, Tools: tools, Only: []string{"deep", "nosuch"}}); found {
		t.Error("Only naming a tool that does not exist is found")
	}
}
