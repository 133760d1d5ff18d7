package toolschema

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/orderedjson"
)

// Draft is a JSON Schema dialect a tool's schema may be written in.
type Draft int

const (
	Draft2020 Draft = iota // MCP's dialect: the default of a schema without $schema
	Draft2019
	Draft7 // draft-06 is the same here
	Draft4
	DraftUnknown // a $schema this package does not know
)

// drafts maps $schema values (without a trailing "#", http or https) to drafts.
var drafts = map[string]Draft{
	"json-schema.org/draft/2020-12/schema": Draft2020,
	"json-schema.org/draft/2019-09/schema": Draft2019,
	"json-schema.org/draft-07/schema":      Draft7,
	"json-schema.org/draft-06/schema":      Draft7,
	"json-schema.org/draft-04/schema":      Draft4,
}

// DialectOf is the dialect of a decoded schema (orderedjson): the one its
// $schema names, or, without one, draft-07 when it uses draft-07's forms
// that 2020-12 reads otherwise (an array-valued items, dependencies),
// else 2020-12. Many servers write draft-07 (zod-to-json-schema's
// default) without saying so.
func DialectOf(root any) Draft {
	o, ok := root.(*orderedjson.Object)
	if !ok {
		return Draft2020
	}
	if s, ok := o.Str("$schema"); ok {
		key := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(s, "#"), "https://"), "http://")
		if d, ok := drafts[key]; ok {
			return d
		}
		return DraftUnknown
	}
	if usesDraft7(root, 0) {
		return Draft7
	}
	return Draft2020
}

// usesDraft7 reports whether the schema v, or one in it, has an
// array-valued items or a dependencies.
func usesDraft7(v any, depth int) bool {
	o, ok := v.(*orderedjson.Object)
	if !ok || depth > orderedjson.MaxDepth {
		return false
	}
	if _, ok := o.Arr("items"); ok || o.Obj("dependencies") != nil {
		return true
	}
	for _, k := range o.Keys {
		var subs []any
		switch v := o.Vals[k]; {
		case schemaKw[k] || k == "items" || k == "additionalItems":
			subs = []any{v}
		case schemaArrayKw[k]:
			subs, _ = v.([]any)
		case schemaMapKw[k] || k == "definitions":
			if m, ok := v.(*orderedjson.Object); ok {
				for _, mk := range m.Keys {
					subs = append(subs, m.Vals[mk])
				}
			}
		}
		for _, sub := range subs {
			if usesDraft7(sub, depth+1) {
				return true
			}
		}
	}
	return false
}

// Normalize returns a tool schema written in draft-04, -06, -07 or
// 2019-09 (DialectOf) as the 2020-12 schema of the same meaning, so that
// every reader of tool schemas (the catalog, the TypeScript client, the
// OpenAPI document) reads one dialect: an array-valued items becomes
// prefixItems and additionalItems items; definitions becomes $defs;
// dependencies splits into dependentRequired and dependentSchemas;
// draft-04's boolean exclusiveMinimum/Maximum become numbers and its id
// $id; a "#name" id becomes an $anchor; before 2019-09 a $ref's siblings
// are ignored, so only its annotations are kept; $refs follow what they
// pointed to; $schema goes. Any other schema (2020-12, an unknown
// dialect, not JSON) is returned as it is.
func Normalize(raw json.RawMessage) json.RawMessage {
	root, err := orderedjson.Decode(raw)
	if err != nil {
		return raw
	}
	d := DialectOf(root)
	if d == Draft2020 || d == DraftUnknown {
		return raw
	}
	n := normalizer{draft: d, moved: map[string]string{}}
	out := n.schema(root, "", "", 0)
	n.refs(out, 0)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return raw
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

type normalizer struct {
	draft Draft
	moved map[string]string // a schema's pointer before -> after
}

// Keywords by what their value is, in the drafts Normalize reads.
var (
	schemaKw      = set("additionalProperties", "contains", "propertyNames", "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema")
	schemaArrayKw = set("allOf", "anyOf", "oneOf", "prefixItems")
	schemaMapKw   = set("properties", "patternProperties", "dependentSchemas", "$defs")
	valueKw       = set("enum", "const", "default", "examples") // data, not schemas
	annotationKw  = set("title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples", "$comment")
)

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// schema translates the schema v at pointer from (before) and to (after).
func (n *normalizer) schema(v any, from, to string, depth int) any {
	n.moved[from] = to
	o, ok := v.(*orderedjson.Object)
	if !ok || depth > orderedjson.MaxDepth {
		return v
	}
	out := &orderedjson.Object{Vals: map[string]any{}}
	put := func(k string, v any) {
		if _, ok := out.Vals[k]; !ok {
			out.Keys = append(out.Keys, k)
		}
		out.Vals[k] = v
	}
	_, hasRef := o.Str("$ref")
	_, tuple := o.Arr("items")
	for _, k := range o.Keys {
		v := o.Vals[k]
		kf := from + "/" + EscapePointer(k)
		switch {
		case k == "$schema":
		case hasRef && n.draft != Draft2019 && k != "$ref" && !annotationKw[k] && k != "definitions" && k != "$defs":
			// ignored beside a $ref before 2019-09 (what it defines is
			// still there for $refs to point into)
		case k == "id" && n.draft == Draft4, k == "$id":
			if s, ok := v.(string); ok && strings.HasPrefix(s, "#") {
				put("$anchor", s[1:])
			} else {
				put("$id", v)
			}
		case k == "items" && tuple:
			put("prefixItems", n.schemas(v.([]any), kf, to+"/prefixItems", depth))
		case k == "items":
			put("items", n.schema(v, kf, to+"/items", depth+1))
		case k == "additionalItems":
			if tuple {
				put("items", n.schema(v, kf, to+"/items", depth+1))
			}
		case k == "definitions" || schemaMapKw[k]:
			name := k
			if k == "definitions" && !o.Has("$defs") {
				name = "$defs"
			}
			put(name, n.schemaMap(v, kf, to+"/"+EscapePointer(name), depth))
		case k == "dependencies":
			n.dependencies(v, kf, to, depth, put)
		case (k == "exclusiveMaximum" || k == "exclusiveMinimum") && n.draft == Draft4:
			if v == true {
				bound := "maximum"
				if k == "exclusiveMinimum" {
					bound = "minimum"
				}
				if b, ok := o.Vals[bound]; ok {
					put(k, b)
				}
			} else if v != false {
				put(k, v)
			}
		case (k == "maximum" && o.Vals["exclusiveMaximum"] == true || k == "minimum" && o.Vals["exclusiveMinimum"] == true) && n.draft == Draft4:
		case schemaKw[k]:
			put(k, n.schema(v, kf, to+"/"+k, depth+1))
		case schemaArrayKw[k]:
			if a, ok := v.([]any); ok {
				put(k, n.schemas(a, kf, to+"/"+k, depth))
			} else {
				put(k, v)
			}
		default:
			put(k, v)
		}
	}
	return out
}

func (n *normalizer) schemas(a []any, from, to string, depth int) []any {
	out := make([]any, len(a))
	for i, s := range a {
		out[i] = n.schema(s, from+"/"+itoa(i), to+"/"+itoa(i), depth+1)
	}
	return out
}

func (n *normalizer) schemaMap(v any, from, to string, depth int) any {
	m, ok := v.(*orderedjson.Object)
	if !ok {
		return v
	}
	out := &orderedjson.Object{Keys: m.Keys, Vals: map[string]any{}}
	for _, k := range m.Keys {
		e := "/" + EscapePointer(k)
		out.Vals[k] = n.schema(m.Vals[k], from+e, to+e, depth+1)
	}
	return out
}

// dependencies splits draft-07's dependencies: a member listing names goes
// to dependentRequired, a member that is a schema to dependentSchemas.
func (n *normalizer) dependencies(v any, from, to string, depth int, put func(string, any)) {
	m, ok := v.(*orderedjson.Object)
	if !ok {
		return
	}
	req := &orderedjson.Object{Vals: map[string]any{}}
	sch := &orderedjson.Object{Vals: map[string]any{}}
	for _, k := range m.Keys {
		e := "/" + EscapePointer(k)
		if a, ok := m.Vals[k].([]any); ok {
			req.Keys, req.Vals[k] = append(req.Keys, k), a
		} else {
			sch.Keys, sch.Vals[k] = append(sch.Keys, k), n.schema(m.Vals[k], from+e, to+"/dependentSchemas"+e, depth+1)
		}
	}
	if len(req.Keys) > 0 {
		put("dependentRequired", req)
	}
	if len(sch.Keys) > 0 {
		put("dependentSchemas", sch)
	}
}

// refs points every local $ref at where its target went.
func (n *normalizer) refs(v any, depth int) {
	if depth > orderedjson.MaxDepth {
		return
	}
	switch v := v.(type) {
	case *orderedjson.Object:
		if r, ok := v.Str("$ref"); ok && strings.HasPrefix(r, "#") {
			if ptr, err := url.PathUnescape(r[1:]); err == nil {
				if to, ok := n.moved[ptr]; ok && to != ptr {
					v.Vals["$ref"] = "#" + (&url.URL{Fragment: to}).EscapedFragment()
				}
			}
		}
		for _, k := range v.Keys {
			if !valueKw[k] {
				n.refs(v.Vals[k], depth+1)
			}
		}
	case []any:
		for _, e := range v {
			n.refs(e, depth+1)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
