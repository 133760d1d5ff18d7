package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"mcpx.dev/mcpx/openapi"
	"mcpx.dev/mcpx/wire"
)

// validateKin fails t unless doc is a valid OpenAPI 3.1 document as
// kin-openapi reads it.
func validateKin(t *testing.T, doc []byte) *openapi3.T {
	t.Helper()
	d, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		t.Fatalf("loading: %v", err)
	}
	if err := d.Validate(context.Background()); err != nil {
		t.Fatalf("validating: %v", err)
	}
	return d
}

// toolDoc is the part of a tool document the tests read.
type toolDoc struct {
	Paths      map[string]map[string]map[string]any `json:"paths"`
	Components struct {
		Schemas map[string]any `json:"schemas"`
	} `json:"components"`
	Unavailable []map[string]any `json:"x-mcpx-unavailable"`
	Skipped     []map[string]any `json:"x-mcpx-skipped-tools"`
}

func decodeDoc(t *testing.T, b []byte) toolDoc {
	t.Helper()
	var d toolDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// ops maps each operation's x-mcp-tool to the operation.
func (d toolDoc) ops() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, item := range d.Paths {
		op := item["post"]
		out[op["x-mcpx-server"].(string)+"/"+op["x-mcp-tool"].(string)] = op
	}
	return out
}

func requestSchema(op map[string]any) map[string]any {
	return op["requestBody"].(map[string]any)["content"].(map[string]any)[wire.MediaJSON].(map[string]any)["schema"].(map[string]any)
}

// mixedTools is a server with good tools and broken ones.
var mixedTools = []map[string]any{
	{"name": "good", "title": "A good tool", "description": "Does good.",
		"inputSchema":  json.RawMessage(`{"type": "object", "$defs": {"n": {"type": "integer"}}, "properties": {"n": {"$ref": "#/$defs/n"}}, "required": ["n"]}`),
		"outputSchema": json.RawMessage(`{"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}`),
		"annotations":  map[string]any{"readOnlyHint": true, "openWorldHint": false}},
	{"name": "also-good", "inputSchema": json.RawMessage(`{"type": "object", "properties": {"s": {"enum": ["a", "b"]}}}`)},
	{"name": "invalid", "inputSchema": json.RawMessage(`{"type": "object", "properties": {"s": {"type": 12}}}`)},
	{"name": "dangling", "inputSchema": json.RawMessage(`{"type": "object", "properties": {"s": {"$ref": "#/$defs/missing"}}}`)},
	{"name": "external", "inputSchema": json.RawMessage(`{"type": "object", "properties": {"s": {"$ref": "https://example.com/s.json"}}}`)},
	{"name": "dynamic", "inputSchema": json.RawMessage(`{"type": "object", "$dynamicAnchor": "n", "properties": {"s": {"$dynamicRef": "#n"}}}`)},
	{"name": "array-output", "inputSchema": json.RawMessage(`{"type": "object"}`),
		"outputSchema": json.RawMessage(`{"type": "array", "items": {"type": "string"}}`)},
	{"name": "no-input"},
	{"name": "bad-draft", "inputSchema": json.RawMessage(`{"$schema": "https://example.com/my-dialect", "type": "object"}`)},
}

// One broken tool never breaks the document nor hides the others: good
// tools are fully typed, broken ones are permissive and say why.
func TestBrokenToolsAmongGoodOnes(t *testing.T) {
	b, err := openapi.ServerDocument(openapi.Options{Version: "test"}, openapi.Server{Name: "mixed", Tools: toolsJSON(t, mixedTools...)})
	if err != nil {
		t.Fatal(err)
	}
	validateKin(t, b)
	d := decodeDoc(t, b)
	ops := d.ops()
	if len(ops) != len(mixedTools) {
		t.Fatalf("%d operations for %d tools: %v", len(ops), len(mixedTools), slices.Sorted(maps.Keys(ops)))
	}
	broken := map[string]string{
		"invalid":      "invalid JSON Schema",
		"dangling":     "missing",
		"external":     "https://example.com/s.json",
		"dynamic":      "$dynamicRef",
		"array-output": `outputSchema: its type is "array", not "object"`,
		"no-input":     "inputSchema: missing",
		"bad-draft":    "my-dialect",
	}
	for name, op := range ops {
		name = strings.TrimPrefix(name, "mixed/")
		why, isBroken := broken[name]
		got, _ := op[openapi.XSchemaError].(string)
		switch {
		case isBroken && !strings.Contains(got, why):
			t.Errorf("%s: %s = %q, want it to mention %q", name, openapi.XSchemaError, got, why)
		case !isBroken && got != "":
			t.Errorf("%s: a good tool is marked: %q", name, got)
		}
	}
	// The good tool is typed by its own schemas.
	good := ops["mixed/good"]
	if req := requestSchema(good); !slices.Equal(toStrings(req["required"]), []string{"n"}) {
		t.Errorf("good's request schema lost its required list: %v", req)
	}
	n := requestSchema(good)["properties"].(map[string]any)["n"].(map[string]any)
	if n["$ref"] != "#/components/schemas/mixed.good.input.n" || d.Components.Schemas["mixed.good.input.n"] == nil {
		t.Errorf("good's $defs/n is not a component: %v", n)
	}
	ok := good["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)[wire.MediaJSON].(map[string]any)["schema"]
	if ok.(map[string]any)["$ref"] != "#/components/schemas/mixed.good.result" {
		t.Errorf("good's result schema is not its component: %v", ok)
	}
	if s, _ := json.Marshal(d.Components.Schemas["mixed.good.result"]); !strings.Contains(string(s), `"sum"`) || !strings.Contains(string(s), "MCPCallToolResult") {
		t.Errorf("good's result schema is not the CallToolResult with its outputSchema: %s", s)
	}
	if ann, _ := good[openapi.XAnnotations].(map[string]any); ann["readOnlyHint"] != true {
		t.Errorf("annotations not carried: %v", good[openapi.XAnnotations])
	}
	if desc, _ := good["description"].(string); !strings.Contains(desc, "read-only") || good["summary"] != "A good tool" {
		t.Errorf("summary %q, description %q", good["summary"], desc)
	}
	// The broken input is permissive: any object.
	if req := requestSchema(ops["mixed/invalid"]); req["type"] != "object" || req["properties"] != nil {
		t.Errorf("invalid's request schema is not permissive: %v", req)
	}
	// array-output keeps its typed input; only its result is untyped.
	if ops["mixed/array-output"]["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)[wire.MediaJSON].(map[string]any)["schema"].(map[string]any)["$ref"] != "#/components/schemas/MCPCallToolResult" {
		t.Error("array-output's result is typed by a schema that was refused")
	}
}

func toStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

// operationIds are unique, keep clean names as they are, and do not
// depend on the order tools are listed in.
func TestOperationIDs(t *testing.T) {
	names := []string{"take-screenshot", "a.b", "a_b", "a b", "a/b", "café", "_", "", "x", "x"}
	var tools []map[string]any
	for _, n := range names {
		tools = append(tools, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
	}
	ids := func(order []map[string]any, servers ...string) (map[string]string, []byte) {
		t.Helper()
		var ss []openapi.Server
		for _, s := range servers {
			ss = append(ss, openapi.Server{Name: s, Tools: toolsJSON(t, order...)})
		}
		b, err := openapi.CombinedDocument(openapi.Options{}, ss)
		if err != nil {
			t.Fatal(err)
		}
		validateKin(t, b)
		out := map[string]string{}
		d := decodeDoc(t, b)
		for key, op := range d.ops() {
			out[key] = op["operationId"].(string)
		}
		if len(d.Skipped) != 2*len(servers) {
			t.Errorf("skipped %v, want the nameless tool and the second x", d.Skipped)
		}
		return out, b
	}
	got, _ := ids(tools, "srv", "s.v", "s_v")
	seen := map[string]string{}
	for key, id := range got {
		if other, dup := seen[id]; dup {
			t.Errorf("operationId %q for %s and %s", id, key, other)
		}
		seen[id] = key
	}
	if len(got) != 3*(len(names)-2) {
		t.Errorf("%d operations, want %d", len(got), 3*(len(names)-2))
	}
	for key, want := range map[string]string{
		"srv/take-screenshot": "srv.take-screenshot", "srv/a_b": "srv.a_b", "srv/x": "srv.x", "srv/café": "srv.caf__",
		"s_v/x": "s_v.x",
	} {
		if got[key] != want {
			t.Errorf("%s: operationId %q, want %q", key, got[key], want)
		}
	}
	if !strings.HasPrefix(got["srv/a.b"], "srv.a_b_") || got["srv/a.b"] == got["srv/a b"] {
		t.Errorf("colliding names: a.b %q, a b %q", got["srv/a.b"], got["srv/a b"])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := slices.Clone(tools)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		// The duplicate "x" that is kept may differ; ids may not.
		again, _ := ids(shuffled, "s_v", "srv", "s.v")
		if !maps.Equal(again, got) {
			t.Fatalf("another order gave other operationIds:\n%v\n%v", again, got)
		}
	}
	if again, _ := ids(tools, "srv", "s.v", "s_v"); !maps.Equal(again, got) {
		t.Error("two builds differ")
	}
}

// A combined document lists the servers whose tools could not be listed,
// and still describes the others.
func TestCombinedWithUnavailableServer(t *testing.T) {
	b, err := openapi.CombinedDocument(openapi.Options{}, []openapi.Server{
		{Name: "up", Description: "An up server.", Tools: toolsJSON(t, mixedTools[1])},
		{Name: "down", Problem: &wire.Problem{Type: wire.ProblemTypeBase + wire.KindChildFailed, Title: "Server failed", Status: 502,
			Detail: "the child exited", StderrTail: "secret stderr"}},
		{Name: "garbled", Tools: json.RawMessage(`{"not": "an array"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	validateKin(t, b)
	d := decodeDoc(t, b)
	if len(d.ops()) != 1 || d.ops()["up/also-good"] == nil {
		t.Errorf("operations %v", slices.Sorted(maps.Keys(d.ops())))
	}
	var down []string
	for _, u := range d.Unavailable {
		down = append(down, u["server"].(string))
	}
	if !slices.Equal(down, []string{"down", "garbled"}) {
		t.Errorf("unavailable %v", d.Unavailable)
	}
	if strings.Contains(string(b), "secret stderr") {
		t.Error("a problem's stderr reached the document")
	}
}

// The cache builds a document once per distinct tool list, waits for one
// build under concurrency, and evicts the oldest beyond its size.
func TestCache(t *testing.T) {
	c := openapi.NewCache(openapi.Options{Version: "test"}, 2)
	list := func(n int) openapi.Server {
		var tools []map[string]any
		for i := range n {
			tools = append(tools, map[string]any{"name": fmt.Sprint("t", i), "inputSchema": map[string]any{"type": "object"}})
		}
		return openapi.Server{Name: "s", Tools: toolsJSON(t, tools...)}
	}
	var wg sync.WaitGroup
	docs := make([]openapi.Document, 8)
	for i := range docs {
		wg.Go(func() {
			d, err := c.Server(list(3))
			if err != nil {
				t.Error(err)
			}
			docs[i] = d
		})
	}
	wg.Wait()
	if c.Builds() != 1 {
		t.Fatalf("%d builds for one list", c.Builds())
	}
	want, err := openapi.ServerDocument(openapi.Options{Version: "test"}, list(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if string(d.JSON) != string(want) || d.ETag != docs[0].ETag || !strings.HasPrefix(d.ETag, `"`) {
			t.Fatalf("a cached document differs from a fresh build, or its ETag (%s) from the first (%s)", d.ETag, docs[0].ETag)
		}
	}
	other, _ := c.Server(list(4))
	if c.Builds() != 2 || other.ETag == docs[0].ETag {
		t.Errorf("a changed list: %d builds, ETag %s (was %s)", c.Builds(), other.ETag, docs[0].ETag)
	}
	if _, err := c.Combined([]openapi.Server{list(3)}); err != nil || c.Builds() != 3 {
		t.Errorf("the combined document of the same list is another document: %d builds, %v", c.Builds(), err)
	}
	// Size 2: list(3)'s server document was the oldest, and is gone.
	c.Server(list(4))
	if c.Builds() != 3 {
		t.Errorf("list(4) rebuilt although cached: %d builds", c.Builds())
	}
	c.Server(list(3))
	if c.Builds() != 4 {
		t.Errorf("an evicted document was not rebuilt: %d builds", c.Builds())
	}
}

// Two tools whose schemas share a root $id are judged each on its own
// (the schema checker is shared within a document).
func TestSameIDInTwoTools(t *testing.T) {
	s := json.RawMessage(`{"$id": "https://example.com/args.json", "type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}}`)
	b, err := openapi.ServerDocument(openapi.Options{}, openapi.Server{Name: "s", Tools: toolsJSON(t,
		map[string]any{"name": "one", "inputSchema": s}, map[string]any{"name": "two", "inputSchema": s})})
	if err != nil {
		t.Fatal(err)
	}
	validateKin(t, b)
	for name, op := range decodeDoc(t, b).ops() {
		if why, ok := op[openapi.XSchemaError]; ok {
			t.Errorf("%s: %v", name, why)
		}
	}
}
