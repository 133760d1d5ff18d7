package clientgen_test

import (
	"bytes"
	"strings"
	"testing"

	"mcpx.dev/mcpx/clientgen"
)

// FuzzCompile feeds arbitrary bytes as a tool's schemas and arbitrary tool
// and server names: Compile never panics (a recovered panic shows as an
// "internal error" problem, which fails too), its output is the same on a
// second run and for the tools in another order, and each tool gets its
// types. TestTypeScriptRandomSchemas is the tsc half, over a sample.
func FuzzCompile(f *testing.F) {
	f.Add("srv", "take-screenshot", []byte(`{"type":"object","properties":{"a":{"type":["string","null"]}},"required":["a"]}`), []byte(`{"$ref":"#/$defs/N","$defs":{"N":{"type":"array","items":{"$ref":"#/$defs/N"}}}}`))
	f.Add("a.b", "delete", []byte(`{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"anyOf":[{"$ref":"#/$defs/A"}]}},"allOf":[{"$ref":"#/$defs/A"},{"required":["x"]}]}`), []byte(`true`))
	f.Add("", "3d", []byte(`{"type":"array","prefixItems":[{"const":1e999}],"items":[{"enum":[]}],"minItems":-1}`), []byte(`{"$ref":"#/properties/x/items/0","properties":{"x":{"items":[{"$ref":"#"}]}}}`))
	f.Add("日本", "*/", []byte(`{"properties":{"*/":{"description":"*/","default":"*/"}},"patternProperties":{"x":false}}`), []byte(`[`))
	for g := range uint64(20) {
		s := &schemaGen{seed: g + 1}
		f.Add(s.name(), s.name(), []byte(s.root()), []byte(s.root()))
	}
	f.Fuzz(func(t *testing.T, server, name string, in, out []byte) {
		tools := []clientgen.Tool{
			{Server: server, Name: name, InputSchema: in, OutputSchema: out},
			{Server: server, Name: name + "2", InputSchema: out, OutputSchema: in},
			{Server: "other", Name: name, InputSchema: in},
		}
		f1, p1 := clientgen.Compile(tools)
		for _, p := range p1 {
			if strings.HasPrefix(p.Message, "internal error") {
				t.Fatalf("Compile panicked: %s", p)
			}
		}
		if len(f1.Types) != len(tools) {
			t.Fatalf("got types for %d tools, want %d", len(f1.Types), len(tools))
		}
		f2, p2 := clientgen.Compile([]clientgen.Tool{tools[2], tools[0], tools[1]})
		if !bytes.Equal(f1.Source, f2.Source) {
			t.Fatalf("output differs between runs or orders:\n%s\n----\n%s", f1.Source, f2.Source)
		}
		if len(p1) != len(p2) {
			t.Fatalf("problems differ between runs: %v vs %v", p1, p2)
		}
		if bytes.Count(f1.Source, []byte("{")) < bytes.Count(f1.Source, []byte("export namespace")) {
			t.Fatalf("a namespace has no body:\n%s", f1.Source)
		}
	})
}
