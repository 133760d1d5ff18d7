// Package argv is the grammar of a cli tool's command line (package
// adapter/cli): which arguments are placeholders, where one may
// stand, and what a tool may be named. It is a leaf, so that the config's
// validation (package broker/config) and the adapter read one rule.
//
//	name, ok := argv.Placeholder("{limit}") // "limit", true
//	errs := argv.Check([]string{"gh", "pr", "list", "--limit={limit}"}, nil) // args[3]: not a whole argument
package argv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// ToolName is what a tool's name must match: the rule every major MCP
// client holds tool names to (the MCP endpoint lists them as
// <server>__<name>, package api/mcp), with no "." (the CLI's
// server.tool). Compiled on first use (its {1,64} makes a program of some
// thousand instructions), so a process that checks no name (the sandbox's
// helper) does not pay for it.
var ToolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// whole is a whole-argument placeholder; inside finds one in an argument.
var (
	whole  = regexp.MustCompile(`^\{([A-Za-z_][A-Za-z0-9_]*)\}$`)
	inside = regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_]*\}`)
)

// Placeholder returns the name of the placeholder arg is ("{name}"), ok
// false if it is none. Other braces ("{a: .b}" for jq) are literal.
func Placeholder(arg string) (name string, ok bool) {
	m := whole.FindStringSubmatch(arg)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Problem is one thing wrong with a command line: the field it is in
// ("args", "args[3]") and what, with the fix.
type Problem struct{ Field, Msg string }

func (p Problem) Error() string { return p.Field + ": " + p.Msg }

// Check checks one tool's argv: non-empty, a program that is no
// placeholder, placeholders only as whole arguments, no NUL, and (with an
// input schema) each placeholder one of its properties.
func Check(args []string, input json.RawMessage) []Problem {
	if len(args) == 0 || args[0] == "" {
		return []Problem{{"args", `empty; args[0] is the program, such as ["git", "log", "-n", "{count}"]`}}
	}
	props, hasInput := Properties(input)
	var out []Problem
	for i, a := range args {
		field := fmt.Sprintf("args[%d]", i)
		name, isWhole := Placeholder(a)
		switch {
		case isWhole && i == 0:
			out = append(out, Problem{field, fmt.Sprintf("the program may not be a placeholder; name the program, and pass %s as a later argument", a)})
		case isWhole && hasInput && props[name] == nil:
			out = append(out, Problem{field, fmt.Sprintf("placeholder %s is not a property of input; add %q to input.properties", a, name)})
		case !isWhole && inside.MatchString(a):
			out = append(out, Problem{field, fmt.Sprintf(`%q holds a placeholder inside an argument; a placeholder must be a whole argument, such as ["--limit", "{limit}"] for --limit={limit}`, a)})
		case strings.IndexByte(a, 0) >= 0:
			out = append(out, Problem{field, "holds a NUL byte"})
		}
	}
	return out
}

// Properties returns the properties of an input schema; ok false when
// there is none (nil or null).
func Properties(input json.RawMessage) (map[string]json.RawMessage, bool) {
	if t := bytes.TrimSpace(input); len(t) == 0 || string(t) == "null" {
		return nil, false
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(input, &s) //nolint:errcheck // a schema that is no object has no properties; CheckInput says why
	return s.Properties, true
}

// CheckInput checks what can be checked of an input schema without a
// validator: a JSON object, of type object if it names one.
func CheckInput(input json.RawMessage) error {
	if _, ok := Properties(input); !ok {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(input, &m); err != nil {
		return errors.New(`the input schema must be a JSON Schema object, such as {"type": "object", "properties": {...}}`)
	}
	if t, ok := m["type"]; ok && t != "object" {
		return errors.New(`the input schema must be an object schema, such as {"type": "object", "properties": {...}}: a call's arguments are an object`)
	}
	return nil
}
