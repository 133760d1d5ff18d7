package broker

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/pool"
)

func listing(tools ...string) json.RawMessage {
	return json.RawMessage("[" + strings.Join(tools, ",") + "]")
}

func tool(name, desc string) string {
	b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
	return string(b)
}

// TestPinsAddRemoveAndReload: a tool added after the first listing is
// new (not approved); a removed one is a removed event and, approved once,
// kept as removed until acknowledged; title and annotations are pinned,
// _meta is not; the file reloads as it was written; a file that is not
// JSON is ignored.
func TestPinsAddRemoveAndReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), PinsFile)
	p := loadPins(path, slog.New(slog.DiscardHandler), nil)
	var evs []pool.Event
	emit := func(e pool.Event) { evs = append(evs, e) }
	p.observe("s", listing(tool("a", "A."), tool("b", "B.")), nil, emit)
	if len(evs) != 0 {
		t.Fatalf("first listing: %+v", evs)
	}
	p.observe("s", listing(tool("a", "A."), tool("c", "C.")), nil, emit)
	changes := map[string]string{}
	for _, e := range evs {
		changes[e.Tool] = e.Change
	}
	if len(evs) != 2 || changes["b"] != ToolRemoved || changes["c"] != ToolAdded {
		t.Fatalf("second listing: %+v", evs)
	}
	states := func(p *pins) map[string]string {
		out := map[string]string{}
		p.mu.Lock()
		sp := serverPinsOf("s", p.doc.Servers["s"], false, false)
		p.mu.Unlock()
		for _, tp := range sp.Tools {
			out[tp.Name] = tp.State
		}
		return out
	}
	want := map[string]string{"a": PinApproved, "b": PinRemoved, "c": PinNew}
	if got := states(p); !mapsEqual(got, want) {
		t.Errorf("states = %v, want %v", got, want)
	}
	// What is pinned: title and annotations change the hash, _meta not.
	base := tool("a", "A.")
	withMeta := `{"name":"a","description":"A.","inputSchema":{"type":"object"},"_meta":{"x":1}}`
	withTitle := `{"name":"a","title":"Eh","description":"A.","inputSchema":{"type":"object"}}`
	withHint := `{"name":"a","description":"A.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`
	h := func(raw string) string { tl, _ := readTool(json.RawMessage(raw)); return tl.hash }
	if h(base) != h(withMeta) || h(base) == h(withTitle) || h(base) == h(withHint) {
		t.Errorf("hashes: base %s, _meta %s, title %s, annotations %s", h(base), h(withMeta), h(withTitle), h(withHint))
	}

	q := loadPins(path, slog.New(slog.DiscardHandler), nil)
	if got := states(q); !mapsEqual(got, want) {
		t.Errorf("states after reload = %v, want %v", got, want)
	}
	if done, err := q.approve("s", "", ""); err != nil || !slices.Equal(done, []string{"b", "c"}) {
		t.Errorf("approve = %v, %v", done, err)
	}
	if got := states(q); !mapsEqual(got, map[string]string{"a": PinApproved, "c": PinApproved}) {
		t.Errorf("states after approval = %v", got)
	}
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := loadPins(path, slog.New(slog.DiscardHandler), nil); len(r.doc.Servers) != 0 {
		t.Errorf("a broken file loaded %d servers", len(r.doc.Servers))
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestToolDiff: a changed description is a -/+ pair with context, an
// invisible character written out; equal definitions have no diff.
func TestToolDiff(t *testing.T) {
	a, _ := readTool(json.RawMessage(tool("a", "Line one.\nLine two.")))
	b, _ := readTool(json.RawMessage(tool("a", "Line one.\nLine two.\u200b")))
	got := toolDiff(a.def, b.def)
	want := "   a\n description:\n   Line one.\n-  Line two.\n+  Line two.<U+200B>\n inputSchema:\n   {\n     \"type\": \"object\""
	if got != want {
		t.Errorf("diff =\n%s\nwant\n%s", got, want)
	}
	if !slices.Contains(b.flags, "invisible-character") {
		t.Errorf("flags = %v", b.flags)
	}
	if d := toolDiff(a.def, a.def); d != "" {
		t.Errorf("diff of equal definitions = %q", d)
	}
	if d := toolDiff(nil, a.def); !strings.HasPrefix(d, "+name:\n+  a\n+description:") {
		t.Errorf("diff of an added tool = %q", d)
	}
}
