package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/defaults"
)

// docRow is one key's row of docs/config.md.
type docRow struct {
	line                                     int
	key, typ, def, example, applies, meaning string
}

// docApplies are the words of the applies column.
var docApplies = []string{"reload", "restart", "run", "command", "ignored", "refused", "per key"}

var codeSpan = regexp.MustCompile("`([^`]*)`")

// configDocRows reads the key tables of docs/config.md: rows whose first
// cell is a key in backticks, six cells each.
func configDocRows(t *testing.T) []docRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []docRow
	for i, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 6 {
			t.Errorf("docs/config.md:%d: %d cells, want 6 (key, type, default, example, applies, meaning): %s", i+1, len(cells), line)
			continue
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, docRow{i + 1, strings.Trim(cells[0], "`"), cells[1], cells[2], cells[3], cells[4], cells[5]})
	}
	return rows
}

// TestConfigDoc holds docs/config.md to the decoder: every key the
// decoder reads (decoderKeys: its own messages, the client formats' keys
// and the Go types) has one row and no row names another; each row says
// when a change applies; each default the embedded defaults state
// (internal/defaults/defaults.json, as `mcpx config --defaults` prints
// them) or config states is the row's; and each row's example, put in a
// config at its key, is accepted by the decoder and the schema (refused
// by both for a refused key).
func TestConfigDoc(t *testing.T) {
	rows := configDocRows(t)
	byKey := map[string]docRow{}
	for _, r := range rows {
		if _, dup := byKey[r.key]; dup {
			t.Errorf("docs/config.md:%d: %s has two rows", r.line, r.key)
		}
		byKey[r.key] = r
		if !slices.Contains(docApplies, r.applies) {
			t.Errorf("docs/config.md:%d: %s applies %q, want one of %q", r.line, r.key, r.applies, docApplies)
		}
	}
	keys := decoderKeys(t)
	if missing := diff(keys, mapOf(byKey)); len(missing) > 0 {
		t.Errorf("docs/config.md has no row for these keys the decoder reads:\n%s", strings.Join(missing, "\n"))
	}
	if stale := diff(mapOf(byKey), keys); len(stale) > 0 {
		t.Errorf("docs/config.md has rows for keys the decoder does not read:\n%s", strings.Join(stale, "\n"))
	}

	for key, want := range documentedDefaults(t) {
		r, ok := byKey[key]
		if !ok {
			continue // reported above
		}
		if !defaultShown(r.def, want) {
			t.Errorf("docs/config.md:%d: %s's default is %s, but the row says %q", r.line, key, want, r.def)
		}
	}

	s := compileSchema(t)
	for _, r := range rows {
		m := codeSpan.FindStringSubmatch(r.example)
		if m == nil {
			t.Errorf("docs/config.md:%d: %s has no example in backticks", r.line, r.key)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(m[1]), &v); err != nil {
			t.Errorf("docs/config.md:%d: %s's example %s is not JSON: %v", r.line, r.key, m[1], err)
			continue
		}
		doc, err := json.Marshal(exampleDoc(r.key, v))
		if err != nil {
			t.Fatal(err)
		}
		_, decErr := Parse(doc, "example.json")
		schErr := schemaVerdict(s, doc)
		if r.applies == "refused" {
			if decErr == nil || schErr == nil {
				t.Errorf("docs/config.md:%d: %s is refused, but the decoder says %v and the schema %v to %s", r.line, r.key, decErr, schErr, doc)
			}
			continue
		}
		if decErr != nil {
			t.Errorf("docs/config.md:%d: the decoder refuses %s's example: %v\n%s", r.line, r.key, decErr, doc)
		}
		if schErr != nil {
			t.Errorf("docs/config.md:%d: the schema refuses %s's example: %v\n%s", r.line, r.key, schErr, doc)
		}
	}
}

func mapOf[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// documentedDefaults are the defaults a row must show: every value of
// the embedded defaults document (a command server's and a url server's
// as servers.*), and those config states itself.
func documentedDefaults(t *testing.T) map[string][]string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(defaults.Document, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var flatten func(path string, v any)
	flatten = func(path string, v any) {
		if m, ok := v.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				seg := k
				if strings.HasPrefix(k, "<") { // "<command server>", "<url server>"
					seg = "*"
				}
				flatten(strings.TrimPrefix(path+"."+seg, "."), m[k])
			}
			return
		}
		b, _ := json.Marshal(v)
		if !slices.Contains(out[path], string(b)) {
			out[path] = append(out[path], string(b))
		}
	}
	flatten("", doc)
	for k, v := range map[string]any{
		"mcp.runTimeout":        Duration(DefaultRunTimeout).String(),
		"mcp.maxOutput":         DefaultRunOutput,
		"registry.url":          DefaultRegistryURL,
		"servers.*.callTimeout": Duration(DefaultCallTimeout).String(),
		"limits.maxDepth":       DefaultMaxDepth,
		"limits.inputWait":      Duration(DefaultInputWait).String(),
	} {
		b, _ := json.Marshal(v)
		if !slices.Contains(out[k], string(b)) {
			out[k] = append(out[k], string(b))
		}
	}
	return out
}

// defaultShown reports whether every one of want (JSON values) is one of
// the cell's code spans: the same string, number or boolean, or the same
// duration however written ("5m" for "5m0s").
func defaultShown(cell string, want []string) bool {
	var spans []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		spans = append(spans, m[1])
	}
	for _, w := range want {
		var v any
		json.Unmarshal([]byte(w), &v) //nolint:errcheck // marshalled above
		if !slices.ContainsFunc(spans, func(s string) bool { return sameValue(s, v) }) {
			return false
		}
	}
	return true
}

func sameValue(span string, v any) bool {
	span = strings.Trim(span, `"`)
	switch v := v.(type) {
	case string:
		if span == v {
			return true
		}
		a, errA := time.ParseDuration(span)
		b, errB := time.ParseDuration(v)
		return errA == nil && errB == nil && a == b
	default:
		b, _ := json.Marshal(v)
		return span == string(b)
	}
}

// exampleDoc is a config with v at key ("*" a name, "[]" an array's
// first element), around it the least a config needs for the key to be
// meaningful: a server of the kind the key belongs to, a rate beside a
// burst, an interval beside a health timeout.
func exampleDoc(key string, v any) map[string]any {
	doc := map[string]any{}
	segs := strings.Split(key, ".")
	switch {
	case segs[0] == "servers" && len(segs) > 2:
		server := map[string]any{"command": "srv"}
		switch segs[2] {
		case "command":
			delete(server, "command")
		case "url", "headers":
			server = map[string]any{"url": "https://mcp.example.com/mcp"}
		case "oauth":
			server = map[string]any{"url": "https://mcp.example.com/mcp"}
			switch {
			case len(segs) > 3 && (segs[3] == "privateKey" || segs[3] == "signingAlgorithm"):
				server["oauth"] = map[string]any{"clientId": "i", "grant": "client_credentials", "privateKey": "${env:K}"}
			case len(segs) > 3 && segs[3] == "grant":
				server["oauth"] = map[string]any{"clientId": "i", "clientSecret": "${env:S}"}
			case len(segs) > 3:
				server["oauth"] = map[string]any{"clientId": "i"}
			}
		case "openapi":
			server = map[string]any{"openapi": map[string]any{"spec": "pets.json", "baseUrl": "https://pets.example/v1"}}
			if len(segs) > 4 && segs[3] == "oauth2" {
				server["openapi"].(map[string]any)["oauth2"] = map[string]any{"clientId": "i", "clientSecret": "${env:S}"}
			}
		case "cli":
			server = map[string]any{"cli": map[string]any{"tools": map[string]any{"x": map[string]any{"args": []any{"true"}}}}}
		case "dependencies":
			server["environment"] = "isolated"
		case "burst":
			server["rate"] = "100/m"
		case "health":
			server["health"] = map[string]any{"interval": "30s"}
			if len(segs) > 3 && (segs[3] == "url" || segs[3] == "expect") {
				server = map[string]any{"url": "https://mcp.example.com/mcp", "health": map[string]any{"interval": "30s", "url": "https://mcp.example.com/healthz"}}
			}
		}
		doc["servers"] = map[string]any{"x": server}
	case key == "limits.ownerBurst":
		doc["limits"] = map[string]any{"ownerRate": "100/m"}
	case key == "pool.health.timeout", key == "pool.health.url", key == "pool.health.expect":
		doc["pool"] = map[string]any{"health": map[string]any{"interval": "30s"}}
	case segs[0] == "webhooks[]":
		doc["webhooks"] = []any{map[string]any{"url": "https://hooks.example.com/mcpx", "secret": "s"}}
	case len(segs) > 1 && segs[1] == "clients[]":
		doc["public"] = map[string]any{"clients": []any{map[string]any{"id": "a", "redirectUris": []any{"https://a.example/cb"}}}}
	case segs[0] == "public" && len(segs) > 1 && !strings.HasPrefix(segs[1], "clients"):
		doc["public"] = map[string]any{"issuer": "https://idp.example.com",
			"grants": []any{map[string]any{"claim": "sub", "values": []any{"alice"}, "servers": []any{"notes"}}}}
	}
	set(doc, segs, v)
	return doc
}

// set puts v at the path segs, making the objects on the way.
func set(doc map[string]any, segs []string, v any) {
	for i, s := range segs {
		if s == "*" {
			s = "x"
		}
		if strings.HasSuffix(s, "[]") {
			doc = doc[strings.TrimSuffix(s, "[]")].([]any)[0].(map[string]any)
			continue
		}
		if i == len(segs)-1 {
			doc[s] = v
			return
		}
		next, ok := doc[s].(map[string]any)
		if !ok {
			next = map[string]any{}
			doc[s] = next
		}
		doc = next
	}
}

// TestDocsConfigExamples: every JSON block of README.md and docs/*.md is
// a config, or a part of one (a server by name, a top-level member), that
// the decoder and the schema accept, or is marked as something else with
// <!-- not a config: what it is --> on the line before it.
func TestDocsConfigExamples(t *testing.T) {
	s := compileSchema(t)
	pages, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	pages = append(pages, filepath.Join("..", "README.md"))
	n := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range jsonBlocks(string(data)) {
			name := fmt.Sprintf("%s:%d", filepath.Base(page), b.line)
			if b.notConfig {
				continue
			}
			doc, err := asConfig(b.text)
			if err != nil {
				t.Errorf("%s: %v; mark a block that is not a config with <!-- not a config: what it is -->:\n%s", name, err, b.text)
				continue
			}
			n++
			if _, err := Parse(doc, name); err != nil {
				t.Errorf("%s: the decoder refuses the example: %v\n%s", name, err, doc)
			}
			if err := schemaVerdict(s, doc); err != nil {
				t.Errorf("%s: the schema refuses the example: %v\n%s", name, err, doc)
			}
		}
	}
	t.Logf("%d config examples checked", n)
	if n < 5 {
		t.Fatalf("found %d config examples in the docs: is the search broken?", n)
	}
}

type jsonBlock struct {
	line      int
	text      string
	notConfig bool
}

var fenceJSON = regexp.MustCompile("(?m)^( *)```json\n")

// jsonBlocks are the ```json blocks of a markdown page (a list item's,
// indented, too).
func jsonBlocks(page string) []jsonBlock {
	var out []jsonBlock
	for _, loc := range fenceJSON.FindAllStringSubmatchIndex(page, -1) {
		indent := page[loc[2]:loc[3]]
		rest := page[loc[1]:]
		end := strings.Index(rest, "```")
		if end < 0 {
			continue
		}
		text := strings.ReplaceAll("\n"+rest[:end], "\n"+indent, "\n")[1:]
		before := strings.TrimRight(page[:loc[0]], "\n")
		prev := strings.TrimSpace(before[strings.LastIndexByte(before, '\n')+1:])
		out = append(out, jsonBlock{
			line:      strings.Count(page[:loc[0]], "\n") + 1,
			text:      text,
			notConfig: strings.HasPrefix(prev, "<!-- not a config"),
		})
	}
	return out
}

// asConfig makes a config of a block: a whole config, top-level members
// ("pool": {...}), or servers by name ("git": {"cli": ...}).
func asConfig(text string) ([]byte, error) {
	var top map[string]json.RawMessage
	if json.Unmarshal([]byte(text), &top) == nil {
		return []byte(text), nil
	}
	wrapped := "{" + text + "}"
	if err := json.Unmarshal([]byte(wrapped), &top); err != nil {
		return nil, fmt.Errorf("not a JSON object, nor its members: %v", err)
	}
	known := append(slices.Clone(topFields), "$schema")
	for k := range top {
		if !slices.Contains(known, k) {
			return []byte(`{"servers": ` + wrapped + "}"), nil
		}
	}
	return []byte(wrapped), nil
}
