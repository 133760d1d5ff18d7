package catalog_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/clientgen/catalog"
)

// catalogTools is three real servers and a wide synthetic one: 27 tools
// whose signatures grow with their number.
func catalogTools(t *testing.T) []catalog.Tool {
	c := corpus(t)
	tools := slices.Concat(c["demo"], c["everything"], c["filesystem"])
	tools = append(tools,
		catalog.Tool{Server: "tiny", Name: "ping"},
		catalog.Tool{Server: "tiny", Name: "get", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)},
		catalog.Tool{Server: "tiny", Name: "put", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"mode":{"enum":["a","b"]}}}`)},
	)
	for i := range 27 {
		props := make([]string, i%6+1)
		for j := range props {
			props[j] = fmt.Sprintf(`"param_%d":{"type":["integer","null"]}`, j)
		}
		tools = append(tools, catalog.Tool{Server: "wide", Name: fmt.Sprintf("operation_%02d", i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)})
	}
	return tools
}

func countBy(tools []catalog.Tool) map[string]int {
	n := map[string]int{}
	for _, t := range tools {
		n[t.Server]++
	}
	return n
}

func TestCatalogBudgetZero(t *testing.T) {
	tools := catalogTools(t)
	c := catalog.New(tools, 0, nil)
	want := countBy(tools)
	if len(c.Servers) != len(want) || len(c.Signatures) != 0 || c.Used != 0 {
		t.Fatalf("budget 0: %d servers (want %d), %d signatures, used %d", len(c.Servers), len(want), len(c.Signatures), c.Used)
	}
	text := c.String()
	for _, s := range c.Servers {
		if s.Tools != want[s.Server] || s.Shown != 0 {
			t.Errorf("%s: %d tools, %d shown; want %d, 0", s.Server, s.Tools, s.Shown, want[s.Server])
		}
		if line := fmt.Sprintf("%s: %d tools, 0 shown\n", s.Server, want[s.Server]); !strings.Contains(text, line) {
			t.Errorf("text lacks %q:\n%s", line, text)
		}
	}
}

func TestCatalogBudget(t *testing.T) {
	tools := catalogTools(t)
	var serverLines int
	for _, s := range catalog.New(tools, 0, nil).Servers {
		serverLines += len(fmt.Sprintf("%s: %d tools, 0 shown\n", s.Server, s.Tools))
	}
	for _, budget := range []int{10, 40, 100, 400, 5000} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			c := catalog.New(tools, budget, nil)
			if c.Used > budget {
				t.Errorf("used %d of %d", c.Used, budget)
			}
			sigText := 0
			for _, s := range c.Signatures {
				sigText += len(s.Text) + 1
			}
			if sigText > 4*budget {
				t.Errorf("signatures take %d characters, more than 4×%d", sigText, budget)
			}
			if len(c.String()) > serverLines+1+4*budget {
				t.Errorf("text of %d characters over the budget's bound %d", len(c.String()), serverLines+1+4*budget)
			}
			// Each server shows a prefix of its cheapest-first ranking.
			byServer := map[string][]catalog.Signature{}
			for _, s := range c.Signatures {
				byServer[s.Server] = append(byServer[s.Server], s)
			}
			for _, s := range c.Servers {
				sigs := byServer[s.Server]
				if len(sigs) != s.Shown {
					t.Errorf("%s: shown %d, %d signatures", s.Server, s.Shown, len(sigs))
				}
				for i := 1; i < len(sigs); i++ {
					if sigs[i-1].Cost > sigs[i].Cost || sigs[i-1].Cost == sigs[i].Cost && sigs[i-1].Name > sigs[i].Name {
						t.Errorf("%s: %s (%d) ranked after %s (%d)", s.Server, sigs[i].Name, sigs[i].Cost, sigs[i-1].Name, sigs[i-1].Cost)
					}
				}
			}
		})
	}
}

// TestCatalogSmallServer checks the round-robin: a 3-tool server beside a
// 27-tool one shows all 3 at a budget far below the wide server's total.
func TestCatalogSmallServer(t *testing.T) {
	var tools []catalog.Tool
	for _, tt := range catalogTools(t) {
		if tt.Server == "tiny" || tt.Server == "wide" {
			tools = append(tools, tt)
		}
	}
	full := catalog.New(tools, 1<<20, nil)
	c := catalog.New(tools, 60, nil)
	if full.Used <= 4*c.Budget {
		t.Fatalf("all signatures cost %d, not far above the budget %d", full.Used, c.Budget)
	}
	shown := map[string]int{}
	for _, s := range c.Servers {
		shown[s.Server] = s.Shown
	}
	if shown["tiny"] != 3 || shown["wide"] == 0 || shown["wide"] == 27 {
		t.Errorf("shown %v at budget 60, want tiny 3 and some of wide", shown)
	}
}

func TestCatalogBias(t *testing.T) {
	tools := catalogTools(t)
	plain := catalog.New(tools, 80, nil)
	biased := catalog.New(tools, 80, []string{"directory"})
	first := func(c catalog.Catalog, server string) string {
		for _, s := range c.Signatures {
			if s.Server == server {
				return s.Name
			}
		}
		return ""
	}
	if got := first(plain, "filesystem"); got != "list_allowed_directories" {
		t.Errorf("cheapest filesystem tool = %q, want list_allowed_directories", got)
	}
	// directory_tree starts with the term: a prefix outscores the
	// cheaper tools that only contain it.
	if got := first(biased, "filesystem"); got != "directory_tree" {
		t.Errorf("with bias directory, first filesystem tool = %q, want directory_tree", got)
	}
}

func TestCatalogDeterministic(t *testing.T) {
	tools := catalogTools(t)
	want := catalog.New(tools, 120, []string{"file"}).String()
	for i := range 5 {
		rotated := slices.Concat(tools[i*7:], tools[:i*7])
		if got := catalog.New(rotated, 120, []string{"file"}).String(); got != want {
			t.Fatalf("run %d differs:\n%s\nvs\n%s", i, got, want)
		}
	}
}

func TestCatalogSignatures(t *testing.T) {
	c := catalog.New(catalogTools(t), 1<<20, nil)
	got := map[string]string{}
	for _, s := range c.Signatures {
		got[s.Server+"."+s.Name] = s.Text
		if s.Cost != (len(s.Text)+4)/4 {
			t.Errorf("%s costs %d for %d characters", s.Text, s.Cost, len(s.Text))
		}
	}
	for name, want := range map[string]string{
		"tiny.ping":         "tiny.ping()",
		"tiny.put":          `tiny.put({id?: string, tags?: string[], mode?: "a"|"b"})`,
		"wide.operation_01": "wide.operation_01({param_0?: number|null, param_1?: number|null})",
		"everything.echo":   "everything.echo({message: string})",
	} {
		if got[name] != want {
			t.Errorf("%s: signature %q, want %q", name, got[name], want)
		}
	}
}

// TestCatalogSignaturesLookThrough: arguments declared or required through
// a root $ref, allOf or oneOf, a $ref'd property and an anyOf of types are
// shown as they are, not as tool() or any (real-use 31).
func TestCatalogSignaturesLookThrough(t *testing.T) {
	tools := map[string]string{
		"byRef":   `{"$ref":"#/$defs/Item","$defs":{"Item":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`,
		"byOneOf": `{"type":"object","oneOf":[{"properties":{"kind":{"const":"a"}},"required":["kind"]},{"properties":{"kind":{"const":"b"},"n":{"type":"integer"}},"required":["kind","n"]}]}`,
		"byAnyOf": `{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`,
		"props":   `{"type":"object","properties":{"item":{"$ref":"#/$defs/Item"},"note":{"anyOf":[{"type":"string"},{"type":"null"}]},"n":{"oneOf":[{"$ref":"#/$defs/N"},{"type":"null"}]}},"$defs":{"Item":{"type":"object"},"N":{"type":"integer"}}}`,
	}
	var in []catalog.Tool
	for name, schema := range tools {
		in = append(in, catalog.Tool{Server: "s", Name: name, InputSchema: json.RawMessage(schema)})
	}
	got := map[string]string{}
	for _, s := range catalog.New(in, 1<<20, nil).Signatures {
		got[s.Name] = s.Text
	}
	for name, want := range map[string]string{
		"byRef":   "s.byRef({name: string})",
		"byOneOf": "s.byOneOf({kind: any, n?: number})",
		"byAnyOf": "s.byAnyOf({...})",
		"props":   "s.props({item?: object, note?: string|null, n?: number|null})",
	} {
		if got[name] != want {
			t.Errorf("%s: signature %q, want %q", name, got[name], want)
		}
	}
}
