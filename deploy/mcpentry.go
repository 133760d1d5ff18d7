package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"mcpx.dev/mcpx/internal/orderedjson"
)

// EntryName is the name of the one MCP server entry mcpx writes into a
// client's config.
const EntryName = "mcpx"

// Server is how a client reaches mcpx as an MCP server: the stdio bridge
// (Env.Binary with Args, `mcpx mcp`), or Streamable HTTP at URL.
type Server struct {
	// Args are the bridge's arguments after Env.Binary; nil = ["mcp"].
	// Used when URL is "".
	Args []string
	// URL is the Streamable HTTP endpoint, e.g. http://127.0.0.1:PORT/mcp;
	// "" = the stdio bridge.
	URL string
	// Headers go with each HTTP request. Headers hold a secret (the
	// daemon's token): a file they are written into is made 0600, and a
	// dry run shows their values as <secret>.
	Headers map[string]string
}

// HTTP reports whether s is the Streamable HTTP form.
func (s Server) HTTP() bool { return s.URL != "" }

func (s Server) args() []string {
	if s.Args == nil {
		return []string{"mcp"}
	}
	return s.Args
}

// headerNames returns s's header names, sorted.
func (s Server) headerNames() []string {
	names := make([]string, 0, len(s.Headers))
	for k := range s.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// secrets are what a dry run hides: the headers' values (a bearer
// token's scheme shown).
func (s Server) secrets() []string {
	var out []string
	for _, k := range s.headerNames() {
		out = append(out, strings.TrimPrefix(s.Headers[k], "Bearer "))
	}
	return out
}

// object builds an ordered JSON object from key, value pairs.
func object(kv ...any) *orderedjson.Object {
	o := &orderedjson.Object{Vals: map[string]any{}}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		o.Keys = append(o.Keys, k)
		o.Vals[k] = kv[i+1]
	}
	return o
}

func strings2any(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// headersObject is s's headers as a JSON object, or nil when there are none.
func (s Server) headersObject() *orderedjson.Object {
	if len(s.Headers) == 0 {
		return nil
	}
	o := object()
	for _, k := range s.headerNames() {
		o.Keys = append(o.Keys, k)
		o.Vals[k] = s.Headers[k]
	}
	return o
}

// withHeaders appends "headers" to o when s has any.
func (s Server) withHeaders(o *orderedjson.Object) *orderedjson.Object {
	if h := s.headersObject(); h != nil {
		o.Keys = append(o.Keys, "headers")
		o.Vals["headers"] = h
	}
	return o
}

// The entry of each client's format, for the binary and server s.

// typedEntry is Claude Code's and VS Code's form: "type" stdio or http.
func typedEntry(binary string, s Server) *orderedjson.Object {
	if s.HTTP() {
		return s.withHeaders(object("type", "http", "url", s.URL))
	}
	return object("type", "stdio", "command", binary, "args", strings2any(s.args()))
}

// plainEntry is Cursor's and Claude Desktop's form: command and args, or
// url (and headers).
func plainEntry(binary string, s Server) *orderedjson.Object {
	if s.HTTP() {
		return s.withHeaders(object("url", s.URL))
	}
	return object("command", binary, "args", strings2any(s.args()))
}

// opencodeEntry is opencode's form: "local" with the whole command line as
// one array, or "remote".
func opencodeEntry(binary string, s Server) *orderedjson.Object {
	if s.HTTP() {
		return s.withHeaders(object("type", "remote", "url", s.URL))
	}
	return object("type", "local", "command", strings2any(append([]string{binary}, s.args()...)))
}

// MCPEntry is the entry called mcpx in the JSON object at parents (e.g.
// ["mcpServers"]) of the JSON config file at path: only that member is
// mcpx's; the rest of the file is the user's, kept with its members in
// their order and its numbers as written (the file is rewritten indented
// by two spaces). A file mcpx creates is 0600, as a client's own config
// file holding other servers' secrets should be; an existing file keeps
// its mode unless s holds a secret (a token), which narrows it to 0600.
func MCPEntry(path string, parents []string, entry *orderedjson.Object, s Server) Part {
	want := marshalJSON(entry) + "\n"
	p := Part{
		Path: path, Name: strings.Join(append(slicesClone(parents), EntryName), "."), Want: want,
		Mode: 0o600, Private: len(s.Headers) > 0, secrets: s.secrets(), mcp: true,
	}
	p.get = func(file []byte) (string, bool, error) {
		doc, err := orderedjson.DecodeObject(file)
		if err != nil {
			var compact bytes.Buffer
			json.Compact(&compact, []byte(want)) //nolint:errcheck // want is our own JSON
			return "", false, fmt.Errorf("%w as %s: %s", err, p.Name, p.Shown(compact.String()))
		}
		parent, err := walk(doc, parents, false)
		if err != nil || parent == nil {
			return "", false, err
		}
		v, ok := parent.Get(EntryName)
		if !ok {
			return "", false, nil
		}
		return marshalJSON(v) + "\n", true, nil
	}
	p.put = func(file []byte, part string) ([]byte, error) {
		doc, err := orderedjson.DecodeObject(file)
		if err != nil {
			return nil, err
		}
		if part == "" {
			removeMember(doc, parents)
			return []byte(marshalJSON(doc) + "\n"), nil
		}
		v, err := orderedjson.Decode([]byte(part))
		if err != nil {
			return nil, err
		}
		parent, err := walk(doc, parents, true)
		if err != nil {
			return nil, err
		}
		set(parent, EntryName, v)
		return []byte(marshalJSON(doc) + "\n"), nil
	}
	return p
}

func slicesClone(ss []string) []string { return append([]string(nil), ss...) }

// walk returns the object at keys below doc, creating missing ones when
// create (else nil for a missing one).
func walk(doc *orderedjson.Object, keys []string, create bool) (*orderedjson.Object, error) {
	o := doc
	for i, k := range keys {
		v, ok := o.Get(k)
		if !ok {
			if !create {
				return nil, nil
			}
			set(o, k, object())
			v = o.Vals[k]
		}
		next, ok := v.(*orderedjson.Object)
		if !ok {
			return nil, fmt.Errorf("its %q is not an object", strings.Join(keys[:i+1], "."))
		}
		o = next
	}
	return o, nil
}

// set sets member k of o, in its place if it has one, else last.
func set(o *orderedjson.Object, k string, v any) {
	if !o.Has(k) {
		o.Keys = append(o.Keys, k)
	}
	o.Vals[k] = v
}

// removeMember removes the entry at parents, then each parent it leaves
// empty.
func removeMember(doc *orderedjson.Object, parents []string) {
	chain := []*orderedjson.Object{doc}
	for _, k := range parents {
		next, ok := chain[len(chain)-1].Vals[k].(*orderedjson.Object)
		if !ok {
			return
		}
		chain = append(chain, next)
	}
	keys := append(slicesClone(parents), EntryName)
	for i := len(chain) - 1; i >= 0; i-- {
		o, k := chain[i], keys[i]
		delete(o.Vals, k)
		for j, name := range o.Keys {
			if name == k {
				o.Keys = append(o.Keys[:j:j], o.Keys[j+1:]...)
				break
			}
		}
		if len(o.Keys) > 0 || i == 0 {
			return
		}
	}
}

// marshalJSON writes v (as orderedjson.Decode returns it) indented by two
// spaces, strings not HTML-escaped: a user's "<" stays "<".
func marshalJSON(v any) string { return orderedjson.Indent(v) }

// jsonString quotes s as JSON without HTML escaping; it is also a valid
// TOML basic string (the escapes \" \\ \n \t \r \uXXXX are TOML's too).
func jsonString(s string) string { return orderedjson.Quote(s) }

// Where each client keeps its user-level MCP config.

// claudeJSON is Claude Code's user config, whose mcpServers are the user
// scope (`claude mcp add -s user`): ~/.claude.json, or .claude.json in
// $CLAUDE_CONFIG_DIR (both as Claude Code 2.1.332 writes them).
func claudeJSON(e Env) string {
	if d := e.Getenv("CLAUDE_CONFIG_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, ".claude.json")
	}
	return filepath.Join(e.Home, ".claude.json")
}

// appConfigDir is where a desktop app keeps its user config: ~/Library/
// Application Support on macOS, $XDG_CONFIG_HOME (~/.config) elsewhere.
func appConfigDir(e Env) string {
	if e.goos() == "darwin" {
		return filepath.Join(e.Home, "Library", "Application Support")
	}
	return e.dir("XDG_CONFIG_HOME", ".config")
}

func (e Env) goos() string {
	if e.OS == "" {
		return runtime.GOOS
	}
	return e.OS
}

// vscodeMCP is VS Code's user-profile mcp.json (what "MCP: Open User
// Configuration" opens for the default profile): every workspace sees its
// servers, where a workspace's .vscode/mcp.json is that folder's only and
// usually committed, no place for a machine's binary path or a token.
func vscodeMCP(e Env) string {
	return filepath.Join(appConfigDir(e), "Code", "User", "mcp.json")
}

// claudeDesktopConfig is Claude Desktop's claude_desktop_config.json:
// ~/Library/Application Support/Claude on macOS; elsewhere the
// $XDG_CONFIG_HOME/Claude the Linux builds use.
func claudeDesktopConfig(e Env) string {
	return filepath.Join(appConfigDir(e), "Claude", "claude_desktop_config.json")
}
