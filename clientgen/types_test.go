package clientgen_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/clientgen"
)

// demoPrelude is a prelude as a config would give it, with a line that
// looks like the end of a comment.
const demoPrelude = "Every tool answers at once except sleep and progress.\n\ncwd names the worktree the child serves */ not a comment end."

// typesCases are the declarations of the demo server that `mcpx types`
// writes, by golden file name: the whole server with its instructions and
// prelude, and one tool without instructions.
func typesCases(t *testing.T) map[string]clientgen.TypesOptions {
	raw, instructions := demoTools(t)
	if instructions == "" {
		t.Fatal("the demo server sends no instructions; the golden files would not show them")
	}
	var ws []wireTool
	if err := json.Unmarshal(raw, &ws); err != nil {
		t.Fatal(err)
	}
	tools := toTools("demo", ws)
	// A tool of another server, which Types leaves out.
	tools = append(tools, clientgen.Tool{Server: "other", Name: "echo", InputSchema: []byte(`{"type":"object"}`)})
	return map[string]clientgen.TypesOptions{
		"demo.ts": {Server: clientgen.Server{Name: "demo", Instructions: instructions, Prelude: demoPrelude}, Tools: tools},
		"demo.echo.ts": {Server: clientgen.Server{Name: "demo", Prelude: demoPrelude}, Tools: tools,
			Tool: "echo"},
	}
}

func TestTypesGolden(t *testing.T) {
	for name, opts := range typesCases(t) {
		t.Run(name, func(t *testing.T) {
			f, problems, found := clientgen.Types(opts)
			if !found || len(problems) > 0 {
				t.Errorf("found = %v, problems %v", found, problems)
			}
			src := string(f.Source)
			if strings.Contains(src, "namespace other") {
				t.Error("the declarations include another server's tools")
			}
			if opts.Tool != "" && len(f.Types) != 1 {
				t.Errorf("declarations of %s: types of %d tools, want 1", opts.Tool, len(f.Types))
			}
			checkGolden(t, filepath.Join("testdata", "types", name), f.Source)
		})
	}
}

func TestTypesUnknownTool(t *testing.T) {
	f, _, found := clientgen.Types(clientgen.TypesOptions{Server: clientgen.Server{Name: "demo"},
		Tools: []clientgen.Tool{{Server: "demo", Name: "echo", InputSchema: []byte(`{}`)}}, Tool: "ecoh"})
	if found {
		t.Errorf("Types found a tool named ecoh:\n%s", f.Source)
	}
}

// A server with no instructions and no prelude has no doc comment: not an
// empty one.
func TestTypesNoInstructions(t *testing.T) {
	f, _, _ := clientgen.Types(clientgen.TypesOptions{Server: clientgen.Server{Name: "demo"},
		Tools: []clientgen.Tool{{Server: "demo", Name: "echo", InputSchema: []byte(`{}`)}}})
	if before, _, _ := strings.Cut(string(f.Source), "export namespace demo"); strings.Contains(before, "/**") || strings.Count(before, "//") != 1 {
		t.Errorf("declarations without instructions or prelude have comments before the namespace besides the header:\n%s", f.Source)
	}
}
