package clientgen_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"mcpx.dev/mcpx/clientgen"
)

// clientTools is every corpus server's tools, plus servers named after the
// runtime's own names and globals, which must not shadow them.
func clientTools(t *testing.T) []clientgen.Tool {
	var tools []clientgen.Tool
	for _, ts := range corpus(t) {
		tools = append(tools, ts...)
	}
	for _, s := range []struct{ server, tool string }{{"fetch", "get"}, {"log", "write"}, {"McpxError", "x"}, {"console", "delete"}} {
		tools = append(tools, clientgen.Tool{Server: s.server, Name: s.tool,
			InputSchema: []byte(`{"type":"object","properties":{}}`)})
	}
	// Required members that arrive only through a root $ref, allOf or
	// oneOf: the arguments are not optional (testdata/client/use.ts).
	for name, schema := range map[string]string{
		"byRef":   `{"$ref":"#/$defs/Item","$defs":{"Item":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`,
		"byAllOf": `{"allOf":[{"type":"object","properties":{"id":{"type":"number"}},"required":["id"]}]}`,
		"byOneOf": `{"type":"object","oneOf":[{"properties":{"kind":{"const":"a"}},"required":["kind"]},{"properties":{"kind":{"const":"b"},"n":{"type":"number"}},"required":["kind","n"]}]}`,
		"byAnyOf": `{"type":"object","anyOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]}`,
		"loose":   `{"type":"object","anyOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"string"}}}]}`,
	} {
		tools = append(tools, clientgen.Tool{Server: "shapes", Name: name, InputSchema: []byte(schema)})
	}
	// An outputSchema that is not an object's does not type the result
	// (MCP's structuredContent is an object): the OpenAPI document's rule.
	tools = append(tools, clientgen.Tool{Server: "shapes", Name: "listOut", InputSchema: []byte(`{"type":"object"}`),
		OutputSchema: []byte(`{"type":"array","items":{"type":"number"}}`)})
	return tools
}

// TestClientGolden keeps the demo server's client in testdata/client/demo.ts
// (`go test ./clientgen -update` rewrites it).
func TestClientGolden(t *testing.T) {
	_, instructions := demoTools(t)
	f, problems := clientgen.Client(clientgen.ClientOptions{Tools: corpus(t)["demo"], Broker: "mcpx test", Cwd: "/src/app",
		Failed:  []clientgen.FailedServer{{Server: "broken", Reason: "the server would not start"}},
		Servers: []clientgen.Server{{Name: "demo", Instructions: instructions, Prelude: demoPrelude}}})
	if len(problems) > 0 {
		t.Errorf("problems: %v", problems)
	}
	checkGolden(t, filepath.Join("testdata", "client", "demo.ts"), f.Source)
	for _, want := range []string{"// Broker: mcpx test\n", "taken for cwd /src/app:\n", "//   demo (", "//   broken: left out: the server would not start\n"} {
		if !strings.Contains(string(f.Source), want) {
			t.Errorf("the header lacks %q", want)
		}
	}
}

// TestClientDeterministic: the module depends on the set of tools, not on
// their order.
func TestClientDeterministic(t *testing.T) {
	tools := clientTools(t)
	first, _ := clientgen.Client(clientgen.ClientOptions{Tools: tools})
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := slices.Clone(tools)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		again, _ := clientgen.Client(clientgen.ClientOptions{Tools: shuffled})
		if string(again.Source) != string(first.Source) {
			t.Fatal("the client differs when the tools come in another order")
		}
	}
}

// TestClientTypeChecks runs tsc --strict --erasableSyntaxOnly over the client
// of every corpus server (erasable syntax only: Node's type stripping runs
// it as it is) and over testdata/client/use.ts, whose @ts-expect-error lines
// must each be errors.
func TestClientTypeChecks(t *testing.T) {
	f, _ := clientgen.Client(clientgen.ClientOptions{Tools: clientTools(t), Broker: "mcpx test"})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "client.ts"), f.Source, 0o644); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join("testdata", "client", "use.ts"), filepath.Join(dir, "use.ts"))
	if out, ok := tsc(t, dir, "--erasableSyntaxOnly", "client.ts", "use.ts"); !ok {
		t.Fatalf("tsc rejected the client or use.ts:\n%s", out)
	}
}

// TestClientStrictTsconfig: a strict user's tsconfig accepts the client:
// --exactOptionalPropertyTypes with the default libs (use.ts: the DOM's
// fetch and AbortSignal fit the client's), and with --lib es2022 alone, no
// DOM and no @types/node (strict.ts) (real-use 34).
func TestClientStrictTsconfig(t *testing.T) {
	f, _ := clientgen.Client(clientgen.ClientOptions{Tools: clientTools(t), Broker: "mcpx test"})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "client.ts"), f.Source, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"use.ts", "strict.ts"} {
		copyFile(t, filepath.Join("testdata", "client", name), filepath.Join(dir, name))
	}
	if out, ok := tsc(t, dir, "--erasableSyntaxOnly", "--exactOptionalPropertyTypes", "client.ts", "use.ts"); !ok {
		t.Errorf("tsc --exactOptionalPropertyTypes rejected the client or use.ts:\n%s", out)
	}
	if out, ok := tsc(t, dir, "--erasableSyntaxOnly", "--exactOptionalPropertyTypes", "--lib", "es2022", "client.ts", "strict.ts"); !ok {
		t.Errorf("tsc --exactOptionalPropertyTypes --lib es2022 rejected the client or strict.ts:\n%s", out)
	}
}

// TestClientLeavesOutServerless: a tool without a server cannot be called
// through the broker; it is reported, and the rest is generated.
func TestClientLeavesOutServerless(t *testing.T) {
	f, problems := clientgen.Client(clientgen.ClientOptions{Tools: []clientgen.Tool{
		{Name: "orphan", InputSchema: []byte(`{}`)},
		{Server: "s", Name: "t", InputSchema: []byte(`{}`)},
	}})
	if len(problems) != 1 || problems[0].Tool != "orphan" {
		t.Errorf("problems = %v, want one for orphan", problems)
	}
	if strings.Contains(string(f.Source), "orphan") || !strings.Contains(string(f.Source), "export const s = {") {
		t.Errorf("orphan generated, or s missing:\n%s", f.Source)
	}
}

// functions maps each tool of a generated client to its function's name.
func functions(t *testing.T, src []byte) map[string]string {
	t.Helper()
	fns := map[string]string{}
	re := regexp.MustCompile(`(?m)^  (\S+): \(args.*\n    \$callTool(?:<[^>]*>)?\("[^"]*", "([^"]*)"`)
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		tool, err := strconv.Unquote(`"` + m[2] + `"`)
		if err != nil {
			t.Fatal(err)
		}
		fns[tool] = m[1]
	}
	return fns
}

// TestClientNamesStable: a tool named exactly its identifier gets it; the
// others that clean to it get a hash of their own name, which no tool added
// or removed changes, and are reported, in the module and as problems; a
// Unicode name an identifier may hold is kept (real-use 33).
func TestClientNamesStable(t *testing.T) {
	gen := func(names ...string) (map[string]string, string, []clientgen.Problem) {
		var tools []clientgen.Tool
		for _, n := range names {
			tools = append(tools, clientgen.Tool{Server: "s", Name: n, InputSchema: []byte(`{"type":"object"}`)})
		}
		f, problems := clientgen.Client(clientgen.ClientOptions{Tools: tools})
		return functions(t, f.Source), string(f.Source), problems
	}
	before, _, _ := gen("get-item", "get_item", "日本", "café")
	after, src, problems := gen("get-item", "get_item", "getItem", "get.item", "日本", "café")
	if after["getItem"] != "getItem" {
		t.Errorf("the tool getItem is called %q, want getItem (functions %v)", after["getItem"], after)
	}
	for _, tool := range []string{"get-item", "get_item"} {
		if before[tool] != after[tool] || !strings.HasPrefix(after[tool], "getItem_") {
			t.Errorf("tool %s: function %q, then %q once more tools came; want the same getItem_<hash>", tool, before[tool], after[tool])
		}
	}
	if after["日本"] != "日本" || after["café"] != "café" {
		t.Errorf("Unicode names: %q, %q; want them kept", after["日本"], after["café"])
	}
	if !strings.Contains(src, "The function is named "+after["get-item"]+": the names of tools") {
		t.Errorf("the module does not say why get-item's function is %s", after["get-item"])
	}
	var reported []string
	for _, p := range problems {
		if p.Schema == "name" && strings.HasPrefix(p.Message, "The function is") {
			reported = append(reported, p.Tool)
		}
	}
	slices.Sort(reported)
	if want := []string{"get-item", "get.item", "get_item"}; !slices.Equal(reported, want) {
		t.Errorf("function collisions reported for %v, want %v", reported, want)
	}
}
