package registry

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Variable is one value an entry needs from the user.
type Variable struct {
	Key   string // what AddOptions.Values and --env K=V name it by
	Where string // where it goes: "env FOO", "header Authorization", "argument --port"
	Input
}

// values resolves a server.json's inputs (see the package doc): from
// given, else ask for a required one, else the default.
type values struct {
	given   map[string]string
	ask     func(Variable) (string, error) // nil = no one to ask
	used    map[string]bool                // keys of given that were read
	missing []Variable
	secret  bool // a secret value was resolved
	err     error
	// collect: record every input asked about in seen and give none
	// (Inputs).
	collect bool
	seen    []Variable
}

// resolve returns v's value and whether it has one.
func (vs *values) resolve(v Variable) (string, bool) {
	if vs.err != nil {
		return "", false
	}
	val, ok := vs.lookup(v)
	if !ok {
		return "", false
	}
	if len(v.Choices) > 0 && !slices.Contains(v.Choices, val) {
		vs.err = fmt.Errorf("%s (%s) is %q; the server accepts one of %s", v.Key, v.Where, val, strings.Join(v.Choices, ", "))
		return "", false
	}
	if v.IsSecret && val != "" {
		vs.secret = true
	}
	return val, true
}

func (vs *values) lookup(v Variable) (string, bool) {
	if v.Value != "" { // fixed by the publisher
		return vs.substitute(v.Value, v.Variables, v.Where), vs.err == nil
	}
	if vs.collect {
		vs.seen = append(vs.seen, v)
		return "", false
	}
	if val, ok := vs.given[v.Key]; ok {
		vs.used[v.Key] = true
		return val, true
	}
	if v.IsRequired && vs.ask != nil {
		val, err := vs.ask(v)
		if err != nil {
			vs.err = fmt.Errorf("asking for %s: %w", v.Key, err)
			return "", false
		}
		if val != "" {
			vs.given[v.Key], vs.used[v.Key] = val, true // asked once
			return val, true
		}
	}
	if v.Default != "" {
		return v.Default, true
	}
	if v.IsRequired {
		vs.missing = append(vs.missing, v)
	}
	return "", false
}

// braced is a {variable} in a value or URL template.
var braced = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// substitute replaces the {var}s of s that vars defines with their values;
// others stay as written, as the format says.
func (vs *values) substitute(s string, vars map[string]Input, where string) string {
	return braced.ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-1]
		in, ok := vars[name]
		if !ok {
			return m
		}
		val, _ := vs.resolve(Variable{Key: name, Where: where, Input: in})
		return val
	})
}

// check reports the missing required values, every one, and the given
// ones the server does not have (a typo, most likely).
func (vs *values) check(server string) error {
	if vs.err != nil {
		return vs.err
	}
	if len(vs.missing) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s needs ", server)
		for i, v := range vs.missing {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (%s", v.Key, v.Where)
			if v.Description != "" {
				fmt.Fprintf(&b, ": %s", v.Description)
			}
			b.WriteString(")")
		}
		b.WriteString("; give each as --env KEY=VALUE, or run mcpx registry add on a terminal to be asked")
		return fmt.Errorf("%s", b.String())
	}
	var unused []string
	for k := range vs.given {
		if !vs.used[k] {
			unused = append(unused, k)
		}
	}
	if len(unused) > 0 {
		slices.Sort(unused)
		return fmt.Errorf("%s has no input called %s; mcpx registry show lists its inputs", server, strings.Join(unused, ", "))
	}
	return nil
}
