// Package toolschema holds the few rules about MCP tool schemas that more
// than one generator must apply alike: which top-level arguments an
// inputSchema declares and requires, looking through a root $ref, allOf,
// anyOf and oneOf (the TypeScript client, whose args parameter is optional
// only when {} is valid, and the catalog's signatures), and when an
// outputSchema types structuredContent (the client and the OpenAPI
// document).
//
//	root, _ := orderedjson.Decode(schema)
//	args := toolschema.Arguments(root) // args.Props, args.Required
//
// A leaf: it imports only internal/orderedjson and the standard library.
package toolschema

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/orderedjson"
)

// maxDepth bounds how deep Arguments follows $refs and combinators.
const maxDepth = 32

// Prop is one top-level argument.
type Prop struct {
	Name string
	// Schema is the property's schema as written (a $ref not followed).
	Schema any
	// Required says every value the schema admits has the property.
	Required bool
}

// Args is what an input schema says about a tool's arguments.
type Args struct {
	// Props are the properties declared at the top: by the root, its $ref
	// target, its allOf members and its anyOf and oneOf branches, in
	// document order, each once.
	Props []Prop
	// Required says calling the tool with no arguments ({}) is wrong: a
	// property is required, or every anyOf or oneOf branch requires one
	// (not necessarily the same), or the schema admits no object at all.
	Required bool
}

// Arguments reads the top-level arguments of a decoded input schema. A
// root that is neither an object nor a boolean requires arguments (its
// type is unknown, so no call is known to be right without them).
func Arguments(root any) Args {
	switch root.(type) {
	case *orderedjson.Object, bool:
	default:
		return Args{Required: true}
	}
	w := walker{root: root}
	s := w.walk(root, 0, nil)
	a := Args{Required: s.needs}
	for _, k := range s.order {
		a.Props = append(a.Props, Prop{Name: k, Schema: s.props[k], Required: slices.Contains(s.req, k)})
	}
	return a
}

type walker struct{ root any }

// shape is what one schema (with what it pulls in) says about the object.
type shape struct {
	order []string
	props map[string]any
	req   []string // required by every value
	needs bool     // {} is not admitted
}

func (s *shape) addProps(o *shape) {
	for _, k := range o.order {
		if _, ok := s.props[k]; !ok {
			s.order = append(s.order, k)
			s.props[k] = o.props[k]
		}
	}
}

func (w *walker) walk(v any, depth int, refs []string) shape {
	s := shape{props: map[string]any{}}
	o, ok := v.(*orderedjson.Object)
	if !ok {
		s.needs = v == false
		return s
	}
	if depth > maxDepth {
		return s
	}
	if props := o.Obj("properties"); props != nil {
		for _, k := range props.Keys {
			s.order = append(s.order, k)
			s.props[k] = props.Vals[k]
		}
	}
	s.req = o.Strings("required")
	s.needs = len(s.req) > 0
	if ref, ok := o.Str("$ref"); ok && !slices.Contains(refs, ref) {
		if target, ok := Resolve(w.root, ref); ok {
			t := w.walk(target, depth+1, append(refs, ref))
			s.addProps(&t)
			s.req = append(s.req, t.req...)
			s.needs = s.needs || t.needs
		}
	}
	if ms, ok := o.Arr("allOf"); ok {
		for _, m := range ms {
			t := w.walk(m, depth+1, refs)
			s.addProps(&t)
			s.req = append(s.req, t.req...)
			s.needs = s.needs || t.needs
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		ms, ok := o.Arr(kw)
		if !ok || len(ms) == 0 {
			continue
		}
		all, common := true, []string(nil)
		for i, m := range ms {
			t := w.walk(m, depth+1, refs)
			s.addProps(&t)
			all = all && t.needs
			if i == 0 {
				common = t.req
			} else {
				common = slices.DeleteFunc(common, func(k string) bool { return !slices.Contains(t.req, k) })
			}
		}
		s.req = append(s.req, common...)
		s.needs = s.needs || all
	}
	if t, ok := o.Str("type"); ok && t != "object" {
		s.needs = true // no object is admitted, {} included
	}
	return s
}

// Resolve follows a local $ref ("#" or "#/json/pointer", percent-encoded
// as a URI fragment) from root; ok is false for any other reference or one
// that does not resolve.
func Resolve(root any, ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil || (frag != "" && frag[0] != '/') {
		return nil, false
	}
	return ResolvePointer(root, frag)
}

// ResolvePointer follows a JSON Pointer (RFC 6901; "" is v itself) from v,
// a value decoded by orderedjson or by encoding/json.
func ResolvePointer(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = UnescapePointer(seg)
		switch cur := v.(type) {
		case *orderedjson.Object:
			next, ok := cur.Vals[seg]
			if !ok {
				return nil, false
			}
			v = next
		case map[string]any:
			next, ok := cur[seg]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(cur) || strconv.Itoa(i) != seg {
				return nil, false
			}
			v = cur[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// EscapePointer escapes one JSON Pointer segment.
func EscapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// UnescapePointer unescapes one JSON Pointer segment.
func UnescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// CheckOutput says whether an outputSchema can type a tool's
// structuredContent: MCP makes structuredContent a JSON object and requires
// an outputSchema to say so with a top-level "type": "object". Any other
// schema (another type, a type list, no type) is not used to type the
// result, and the error says why; both generators follow this one rule.
func CheckOutput(raw json.RawMessage) error {
	var top struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if top.Type != "object" {
		return fmt.Errorf(`its type is %s, not "object": MCP requires an outputSchema to describe an object`, describeType(top.Type))
	}
	return nil
}

func describeType(t any) string {
	if t == nil {
		return "missing"
	}
	b, _ := json.Marshal(t)
	return string(b)
}
