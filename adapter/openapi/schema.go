package openapi

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A tool's schemas are JSON Schema 2020-12 (MCP's dialect), made from the
// document's schemas as JSON:
//
//   - Every $ref (after kin-openapi has internalized external ones into
//     #/components/schemas) becomes #/$defs/<name>, its target copied into
//     the tool schema's $defs under the last segment of its pointer
//     (characters other than letters, digits, ".", "_" and "-" become "_";
//     a name two targets share gets "_2", "_3" …). A target is copied once,
//     before its own references are followed, so a recursive schema is a
//     $defs member that references itself.
//   - OpenAPI 3.0's dialect is translated: "nullable": true adds "null" to
//     the type (and to an enum), boolean exclusiveMinimum/Maximum become
//     numbers, "example" becomes "examples".
//   - The OpenAPI-only keywords discriminator, xml and externalDocs are
//     dropped: they say nothing about a value.
//
// Everything else is copied as it is; data keywords (enum, const, default,
// examples) are never walked, so a member named "$ref" in an example stays.

// schemaKeys hold one schema, schemaLists an array of schemas, schemaMaps
// an object of schemas.
var (
	schemaKeys  = []string{"items", "not", "additionalProperties", "contains", "propertyNames", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems"}
	schemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	dropped     = []string{"discriminator", "xml", "externalDocs"}
)

// maxSchemaDepth bounds how deep a schema is walked.
const maxSchemaDepth = 64

// schemas converts the schemas of one tool, sharing its $defs.
type schemas struct {
	doc   any  // the whole document as JSON, where $refs point
	is30  bool // the document is OpenAPI 3.0
	names map[string]string
	taken map[string]bool
	defs  map[string]any
	err   error // the first reference that did not resolve
}

func newSchemas(doc any, is30 bool) *schemas {
	return &schemas{doc: doc, is30: is30, names: map[string]string{}, taken: map[string]bool{}, defs: map[string]any{}}
}

// convert is node as a tool's JSON Schema.
func (s *schemas) convert(node any) any {
	return s.walk(node, 0)
}

func (s *schemas) walk(node any, depth int) any {
	m, ok := node.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return node // a boolean schema, or malformed: as it is
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch {
		case k == "$ref":
			ref, _ := v.(string)
			out[k] = "#/$defs/" + s.def(ref, depth)
		case slices.Contains(schemaKeys, k):
			out[k] = s.walk(v, depth+1)
		case slices.Contains(schemaLists, k):
			if l, ok := v.([]any); ok {
				c := make([]any, len(l))
				for i, e := range l {
					c[i] = s.walk(e, depth+1)
				}
				v = c
			}
			out[k] = v
		case slices.Contains(schemaMaps, k):
			if mm, ok := v.(map[string]any); ok {
				c := make(map[string]any, len(mm))
				for n, e := range mm {
					c[n] = s.walk(e, depth+1)
				}
				v = c
			}
			out[k] = v
		case slices.Contains(dropped, k):
		default:
			out[k] = v
		}
	}
	if s.is30 {
		translate30(out)
	}
	if ex, ok := out["example"]; ok {
		if _, has := out["examples"]; !has {
			out["examples"] = []any{ex}
		}
		delete(out, "example")
	}
	return out
}

// translate30 rewrites OpenAPI 3.0's nullable and boolean exclusive bounds.
func translate30(m map[string]any) {
	if n, _ := m["nullable"].(bool); n {
		switch t := m["type"].(type) {
		case string:
			m["type"] = []any{t, "null"}
		case []any:
			if !slices.Contains(t, any("null")) {
				m["type"] = append(t, "null")
			}
		}
		if e, ok := m["enum"].([]any); ok && !slices.Contains(e, nil) {
			m["enum"] = append(e, nil)
		}
	}
	delete(m, "nullable")
	for ex, bound := range map[string]string{"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"} {
		b, ok := m[ex].(bool)
		if !ok {
			continue
		}
		delete(m, ex)
		if v, has := m[bound]; b && has {
			m[ex] = v
			delete(m, bound)
		}
	}
}

// defName cleans a pointer segment into a $defs name.
var defName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// def names the $defs member for ref, copying its target on first use.
func (s *schemas) def(ref string, depth int) string {
	if n, ok := s.names[ref]; ok {
		return n
	}
	base := ref[strings.LastIndexByte(ref, '/')+1:]
	base = defName.ReplaceAllString(unescapePointer(base), "_")
	if base == "" {
		base = "schema"
	}
	name := base
	for i := 2; s.taken[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	s.names[ref], s.taken[name] = name, true
	target, err := lookup(s.doc, ref)
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		s.defs[name] = map[string]any{}
		return name
	}
	s.defs[name] = true // a placeholder while the target is walked
	s.defs[name] = s.walk(target, depth+1)
	return name
}

// lookup resolves a document-local JSON pointer ("#/components/schemas/Pet").
func lookup(doc any, ref string) (any, error) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("$ref %q is not inside the document", ref)
	}
	node := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if ptr == "" {
			break
		}
		tok = unescapePointer(tok)
		switch n := node.(type) {
		case map[string]any:
			v, ok := n[tok]
			if !ok {
				return nil, fmt.Errorf("$ref %q does not resolve", ref)
			}
			node = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil, fmt.Errorf("$ref %q does not resolve", ref)
			}
			node = n[i]
		default:
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return node, nil
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// isObject reports whether schema (following $refs) admits only objects
// (and so can be an outputSchema as it is).
func (s *schemas) isObject(schema any) bool {
	for range maxSchemaDepth {
		m, ok := schema.(map[string]any)
		if !ok {
			return false
		}
		if t, ok := m["type"]; ok {
			return t == "object"
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return false
		}
		name := strings.TrimPrefix(ref, "#/$defs/")
		schema = s.defs[name]
	}
	return false
}

// withDefs sets root's $defs to the tool's (if any).
func (s *schemas) withDefs(root map[string]any) map[string]any {
	if len(s.defs) > 0 {
		root["$defs"] = s.defs
	}
	return root
}
