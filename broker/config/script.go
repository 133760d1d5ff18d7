package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

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
	// Interpreter runs a file of an extension (".py") that is not
	// JavaScript or TypeScript: a command, split at spaces, given the
	// file and its arguments ("python3 -u"). It wins over the file's
	// shebang line. Nearer layers win per extension.
	Interpreter map[string]string `json:"interpreter,omitzero"`
	// Env is environment every script gets (KEY: value). Nearer layers
	// win per variable; --env wins over all.
	Env map[string]string `json:"env,omitzero"`
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

var scriptFields = []string{"prefix", "suffix", "interpreter", "env"}

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
		case "interpreter":
			sc.Interpreter = p.decodeInterpreters(m.value)
		case "env":
			sc.Env = p.decodeScriptEnv(m.value)
		default:
			hint := "the fields are prefix, suffix, interpreter and env"
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

// jsExtensions are the extensions a JS runtime runs; an interpreter is
// never configured for one. (Package scripts has the same list: config
// cannot import it.)
var jsExtensions = []string{".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"}

// decodeInterpreters reads script.interpreter: {".py": "python3"}.
func (p *problems) decodeInterpreters(raw json.RawMessage) map[string]string {
	m := p.decodeStringMap("script.interpreter", raw, `such as {".py": "python3", ".rb": "ruby -w"}`)
	for _, ext := range slices.Sorted(maps.Keys(m)) {
		cmd := m[ext]
		field := fmt.Sprintf("script.interpreter[%q]", ext)
		switch {
		case len(ext) < 2 || ext[0] != '.' || strings.ContainsAny(ext[1:], "./\\ "):
			p.add("", field, fmt.Sprintf("%s: %q is not a file extension", field, ext), `write it with its dot, such as ".py"`)
		case slices.Contains(jsExtensions, ext):
			p.add("", field, fmt.Sprintf("%s: %s files run on the JavaScript runtime (--runtime, $MCPX_RUNTIME)", field, ext), "remove it")
		case strings.TrimSpace(cmd) == "":
			p.add("", field, field+" is empty", `name the command, such as "python3"`)
		}
	}
	return m
}

// decodeScriptEnv reads script.env: {"KEY": "value"}.
func (p *problems) decodeScriptEnv(raw json.RawMessage) map[string]string {
	m := p.decodeStringMap("script.env", raw, `such as {"REPORT_DIR": "/tmp/reports"}`)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			p.add("", fmt.Sprintf("script.env[%q]", k), fmt.Sprintf("script.env: %q is not a variable name", k), "a name has no = and is not empty")
		}
	}
	return m
}

// decodeStringMap reads an object of strings; null is the same as leaving
// it out.
func (p *problems) decodeStringMap(field string, raw json.RawMessage, example string) map[string]string {
	if isNull(raw) {
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		p.add("", field, field+" must be an object of strings", example)
		return nil
	}
	return m
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

// MergeMaps folds per-key layers, nearest first: a nearer layer's key wins.
func MergeMaps(layers []map[string]string) map[string]string {
	out := map[string]string{}
	for i := len(layers) - 1; i >= 0; i-- {
		maps.Copy(out, layers[i])
	}
	return out
}
