package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"mcpx.dev/mcpx/internal/suggest"
)

// Script is the "script" block: what `mcpx run` and `mcpx exec` put around
// every script they run. Each layer of the config chain may set it;
// MergeLines folds the layers.
//
//	"script": {"prefix": [null, "console.time('run')"], "suffix": ["console.timeEnd('run')", null]}
type Script struct {
	// Prefix lines run before the script's module is imported; Suffix
	// lines in a finally after it has run.
	Prefix Lines `json:"prefix,omitzero"`
	Suffix Lines `json:"suffix,omitzero"`
}

// Lines is one layer's value of a layered list of source lines. nil: the
// layer does not set it, and inherits it as it is. Otherwise each entry is
// a line, or nil for the inherited lines spliced in at that position; a
// list without nil replaces what it inherits ([] clears it).
type Lines []*string

// Over returns l applied over the lines it inherits.
func (l Lines) Over(inherited []string) []string {
	if l == nil {
		return inherited
	}
	out := []string{}
	for _, s := range l {
		if s == nil {
			out = append(out, inherited...)
		} else {
			out = append(out, *s)
		}
	}
	return out
}

// MergeLines folds layers, nearest first (the chain's order), from the
// farthest inward: each applies Over what the layers beyond it give.
func MergeLines(layers []Lines) []string {
	var out []string
	for i := len(layers) - 1; i >= 0; i-- {
		out = layers[i].Over(out)
	}
	return out
}

var scriptFields = []string{"prefix", "suffix"}

func (p *problems) decodeScript(sc *Script, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "script", "script must be an object", `such as {"prefix": [null, "console.time('run')"]}`)
		return
	}
	for _, m := range members {
		switch m.key {
		case "prefix":
			sc.Prefix = p.decodeLines("script.prefix", m.value)
		case "suffix":
			sc.Suffix = p.decodeLines("script.suffix", m.value)
		default:
			hint := "the fields are prefix and suffix"
			if s := suggest.Closest(m.key, scriptFields); s != "" {
				hint = fmt.Sprintf("did you mean %q?", s)
			}
			p.add("", "script."+m.key, fmt.Sprintf("unknown field %q", "script."+m.key), hint)
		}
	}
}

// decodeLines reads a list of strings and nulls; null as the whole value
// is the same as leaving it out.
func (p *problems) decodeLines(field string, raw json.RawMessage) Lines {
	if isNull(raw) {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		p.add("", field, field+" must be a list of strings and nulls (null: the inherited lines, spliced in there)",
			`such as [null, "console.time('run')"]`)
		return nil
	}
	out := Lines{}
	for i, it := range items {
		if isNull(it) {
			out = append(out, nil)
			continue
		}
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			p.add("", fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("%s[%d] is %s, not a string or null", field, i, it),
				"write the line as a JSON string, or null for the inherited lines")
			continue
		}
		out = append(out, &s)
	}
	return out
}

// LoadScript reads only the "script" block of the config file at path, as
// `mcpx run` does for each file of the chain: the file's other fields are
// the daemon's. A missing file has none; an error names the file and
// field.
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Script{}, nil
	}
	if err != nil {
		return Script{}, &Problem{Op: "load config", Err: err, Msg: fmt.Sprintf("reading config file %s: %v", path, err)}
	}
	var p problems
	members, err := objectMembers(data)
	if err != nil {
		p.syntax(data, err)
		return Script{}, p.err(path)
	}
	var sc Script
	for _, m := range members {
		if m.key == "script" {
			p.decodeScript(&sc, m.value)
		}
	}
	return sc, p.err(path)
}
