package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"mcpx.dev/mcpx/internal/toolschema"
)

// Carrying a tool's JSON Schema into an OpenAPI 3.1 document.
//
// OpenAPI 3.1's schema dialect is JSON Schema 2020-12, so a tool's schema
// goes in nearly as it is. What changes, and why:
//
//   - $ref: a schema's references point into the schema itself (#,
//     #/$defs/x, #/properties/a/items, an anchor). Each place a reference
//     points to becomes a component, and the reference is rewritten to
//     #/components/schemas/<component>: the referenced locations are no
//     longer inside the schema once it sits in a document. The $defs (and
//     draft-07 definitions) containers are dropped, their referenced members
//     now being components. A schema that references its own root (a
//     recursive one) is itself a component, and its request body a $ref to
//     it.
//   - A $ref with sibling keywords becomes an allOf holding the $ref beside
//     the siblings: the same meaning in 2020-12, and tools that read a $ref
//     object as "the referenced schema and nothing else" (kin-openapi,
//     most generators) see the siblings too.
//   - Boolean schemas become {} (true) and {"not": {}} (false), which
//     OpenAPI tools accept everywhere, except as additionalProperties,
//     unevaluatedProperties and unevaluatedItems, where they stay booleans.
//   - $schema, $id, $anchor and $vocabulary are dropped: the document is the
//     schema's resource now, and the dialect is the document's.
//   - A schema of an older draft (draft-04, -06, -07, 2019-09, named by its
//     $schema) is translated to 2020-12 with the same meaning: an items
//     array becomes prefixItems and additionalItems becomes items,
//     dependencies splits into dependentRequired and dependentSchemas,
//     draft-04's boolean exclusiveMinimum/Maximum become numbers, and
//     before 2019-09 a $ref's siblings are ignored, so only its annotations
//     (title, description, default, examples, …) are kept.
//   - A keyword JSON Schema does not define is an annotation without
//     effect; the document keeps it as x-keyword-<name> (OpenAPI linters
//     refuse unknown schema members), and an x- member as it is.
//
// Everything else — enum, const, oneOf/anyOf/allOf, formats, defaults,
// descriptions, additionalProperties, patterns, bounds — is copied as it
// is. The tests check that valid and invalid arguments get the same verdict
// from the emitted schema as from the original.
//
// A schema that cannot be carried is refused with the reason: invalid JSON
// Schema (it does not compile against its draft's metaschema), a $ref that
// does not resolve inside the schema (external references are never
// fetched), $dynamicRef and $recursiveRef (whose meaning depends on the
// path taken at validation time), and schema resources embedded with their
// own $id.

// draft is the JSON Schema draft a tool's schema is written in.
type draft int

const (
	draft2020 draft = iota // the default: MCP names 2020-12 the dialect of a schema without $schema
	draft2019
	draft7 // draft-06 is the same here
	draft4
)

// drafts maps $schema values (without a trailing "#", http or https) to drafts.
var drafts = map[string]draft{
	"json-schema.org/draft/2020-12/schema": draft2020,
	"json-schema.org/draft/2019-09/schema": draft2019,
	"json-schema.org/draft-07/schema":      draft7,
	"json-schema.org/draft-06/schema":      draft7,
	"json-schema.org/draft-04/schema":      draft4,
}

func draftOf(root any) (draft, error) {
	m, ok := root.(map[string]any)
	if !ok {
		return draft2020, nil
	}
	s, ok := m["$schema"].(string)
	if !ok {
		return draft2020, nil
	}
	key := strings.TrimSuffix(s, "#")
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	d, ok := drafts[key]
	if !ok {
		return 0, fmt.Errorf("$schema %q is not a JSON Schema draft this broker knows (2020-12, 2019-09, draft-07, -06, -04)", s)
	}
	return d, nil
}

// Keywords by what their value is. Anything not listed is an unknown
// keyword (an annotation).
var (
	// A schema.
	schemaKeywords = set("additionalProperties", "contains", "propertyNames", "not", "if", "then", "else",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema", "items", "additionalItems")
	// An array of schemas.
	schemaArrayKeywords = set("allOf", "anyOf", "oneOf", "prefixItems")
	// An object whose values are schemas.
	schemaMapKeywords = set("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
	// A value copied as it is.
	valueKeywords = set("type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
		"exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
		"maxContains", "minContains", "maxProperties", "minProperties", "required", "dependentRequired",
		"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples", "format",
		"contentEncoding", "contentMediaType", "$comment")
	// Annotations: what a pre-2019 $ref keeps of its siblings.
	annotationKeywords = set("title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples", "$comment")
	// Dropped: the document is the resource now.
	droppedKeywords = set("$schema", "$id", "id", "$anchor", "$vocabulary", "$dynamicAnchor", "$recursiveAnchor", "$defs", "definitions")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// keepBoolean are the keywords whose boolean schemas stay booleans:
// OpenAPI tools have always read additionalProperties: false as a closed
// object, and so do they the unevaluated ones.
var keepBoolean = set("additionalProperties", "unevaluatedProperties", "unevaluatedItems")

// unknownPrefix renames a keyword JSON Schema does not define.
const unknownPrefix = "x-keyword-"

// carried is a tool schema as the document holds it.
type carried struct {
	// schema is the operation's schema: inline, or a $ref to the
	// component of a recursive root.
	schema any
	// components are the referenced locations, by component name.
	components map[string]any
}

// carrier carries one schema.
type carrier struct {
	root   any
	draft  draft
	prefix string            // component names start with prefix + "."
	names  map[string]string // JSON pointer of a referenced location -> component name
	taken  map[string]bool   // component names given
	// anchors maps $anchor names (and draft-07 "#name" ids) to pointers.
	anchors map[string]string
	baseID  string // the root's $id, without fragment; "" = none
}

// carrySchema carries the schema raw, naming its components prefix.<name>;
// sc checks it.
func carrySchema(sc *schemaChecker, raw json.RawMessage, prefix string) (carried, error) {
	root, err := decode(toolschema.Normalize(raw)) // an older draft as 2020-12, as the client and the catalog read it
	if err != nil {
		return carried{}, fmt.Errorf("not JSON: %w", err)
	}
	d, err := draftOf(root)
	if err != nil {
		return carried{}, err
	}
	if err := sc.check(root); err != nil {
		return carried{}, err
	}
	c := &carrier{root: root, draft: d, prefix: prefix, names: map[string]string{}, taken: map[string]bool{},
		anchors: map[string]string{}}
	if m, ok := root.(map[string]any); ok {
		id, _ := m["$id"].(string)
		if d == draft4 {
			id, _ = m["id"].(string)
		}
		if !strings.HasPrefix(id, "#") {
			c.baseID, _, _ = strings.Cut(id, "#")
		}
	}
	// Collect the anchors anywhere, then the locations $refs point to,
	// from the root and from each location found (so that an unreferenced
	// $defs member costs nothing and may even be broken).
	if err := c.walk(root, "", true, func(string, map[string]any) error { return nil }); err != nil {
		return carried{}, err
	}
	var targets []string
	collect := func(_ string, m map[string]any) error {
		r, ok := m["$ref"].(string)
		if !ok {
			return nil
		}
		ptr, err := c.resolve(r)
		if err != nil {
			return err
		}
		if _, ok := c.names[ptr]; !ok {
			c.names[ptr] = ""
			targets = append(targets, ptr)
		}
		return nil
	}
	if err := c.walk(root, "", false, collect); err != nil {
		return carried{}, err
	}
	for i := 0; i < len(targets); i++ {
		node, _ := toolschema.ResolvePointer(root, targets[i])
		if err := c.walk(node, targets[i], false, collect); err != nil {
			return carried{}, err
		}
	}
	slices.Sort(targets)
	for _, ptr := range targets {
		c.names[ptr] = c.name(ptr)
	}
	out := carried{components: map[string]any{}}
	for _, ptr := range targets {
		node, _ := toolschema.ResolvePointer(root, ptr)
		s, err := c.emit(node)
		if err != nil {
			return carried{}, err
		}
		out.components[c.names[ptr]] = s
	}
	if name, ok := c.names[""]; ok {
		out.schema = ref(name)
	} else if out.schema, err = c.emit(root); err != nil {
		return carried{}, err
	}
	return out, nil
}

// decode parses JSON keeping numbers exact.
func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// schemaChecker compiles tool schemas with a real validator: against
// their draft's metaschema, resolving their references. One checker serves
// the schemas of one document, so the metaschemas are compiled once.
type schemaChecker struct {
	c *jsonschema.Compiler
	n int
}

func newSchemaChecker() *schemaChecker {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noFetch{})
	return &schemaChecker{c: c}
}

// noFetch refuses every URL: a tool's schema is compiled on its own, and a
// $ref outside it is unresolvable rather than fetched.
type noFetch struct{}

func (noFetch) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is outside the schema, and the broker fetches nothing", u)
}

func (sc *schemaChecker) check(root any) error {
	// Each schema at a URL of its own, which no $ref of another can name
	// by accident (a $ref with a URL of its own is refused by carrySchema).
	sc.n++
	u := "mcpx:tool-schema/" + strconv.Itoa(sc.n)
	if compile(sc.c, u, root) == nil {
		return nil
	}
	// Judge a failure alone: another tool's schema may have claimed the
	// same $id in the shared compiler.
	return compile(newSchemaChecker().c, u, root)
}

func compile(c *jsonschema.Compiler, u string, root any) error {
	if err := c.AddResource(u, root); err != nil {
		return fmt.Errorf("invalid JSON Schema: %s", oneLine(err.Error()))
	}
	if _, err := c.Compile(u); err != nil {
		return fmt.Errorf("invalid JSON Schema: %s", oneLine(err.Error()))
	}
	return nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// walk calls fn on every object schema in node (at JSON pointer ptr), its
// keywords in sorted order; into the $defs and definitions containers only
// if intoDefs. It records anchors, and fails on what cannot be carried:
// dynamic references and embedded resources.
func (c *carrier) walk(node any, ptr string, intoDefs bool, fn func(ptr string, m map[string]any) error) error {
	m, ok := node.(map[string]any)
	if !ok {
		return nil
	}
	for _, k := range []string{"$dynamicRef", "$recursiveRef"} {
		if _, ok := m[k]; ok {
			return fmt.Errorf("%s at %q: a dynamic reference, whose target depends on the path taken at validation time, cannot be carried over", k, "#"+ptr)
		}
	}
	idKey := "$id"
	if c.draft == draft4 {
		idKey = "id"
	}
	if id, ok := m[idKey].(string); ok {
		switch {
		case strings.HasPrefix(id, "#") && c.draft >= draft7:
			c.anchors[id[1:]] = ptr // a pre-2019 anchor
		case ptr != "":
			return fmt.Errorf("%s %q at %q: schema resources embedded with their own id cannot be carried over", idKey, id, "#"+ptr)
		}
	}
	if a, ok := m["$anchor"].(string); ok {
		c.anchors[a] = ptr
	}
	if err := fn(ptr, m); err != nil {
		return err
	}
	if _, ok := m["$ref"]; ok && c.draft >= draft7 {
		return nil // before 2019-09, a $ref's siblings are not schema keywords at all
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		p := ptr + "/" + toolschema.EscapePointer(k)
		switch {
		case c.draft == draft2020 && (k == "additionalItems" || k == "dependencies"):
			// Not 2020-12 keywords: annotations, never applied.
		case (k == "$defs" || k == "definitions") && !intoDefs:
		case schemaKeywords[k] || k == "dependencies":
			if arr, ok := v.([]any); ok && (k == "items" || k == "dependencies") {
				if k == "dependencies" {
					continue
				}
				for i, e := range arr {
					if err := c.walk(e, p+"/"+strconv.Itoa(i), intoDefs, fn); err != nil {
						return err
					}
				}
				continue
			}
			if k == "dependencies" {
				dm, _ := v.(map[string]any)
				for _, dk := range slices.Sorted(maps.Keys(dm)) {
					if err := c.walk(dm[dk], p+"/"+toolschema.EscapePointer(dk), intoDefs, fn); err != nil {
						return err
					}
				}
				continue
			}
			if err := c.walk(v, p, intoDefs, fn); err != nil {
				return err
			}
		case schemaArrayKeywords[k]:
			arr, _ := v.([]any)
			for i, e := range arr {
				if err := c.walk(e, p+"/"+strconv.Itoa(i), intoDefs, fn); err != nil {
					return err
				}
			}
		case schemaMapKeywords[k]:
			sm, _ := v.(map[string]any)
			for _, sk := range slices.Sorted(maps.Keys(sm)) {
				if err := c.walk(sm[sk], p+"/"+toolschema.EscapePointer(sk), intoDefs, fn); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// resolve turns a $ref into the JSON pointer of its target in the root.
func (c *carrier) resolve(r string) (string, error) {
	u, err := url.Parse(r)
	if err != nil {
		return "", fmt.Errorf("$ref %q: %w", r, err)
	}
	frag := u.Fragment
	u.Fragment = ""
	if rest := u.String(); rest != "" && rest != c.baseID {
		return "", fmt.Errorf("$ref %q points outside the schema; it cannot be resolved", r)
	}
	ptr := frag
	if frag != "" && !strings.HasPrefix(frag, "/") {
		p, ok := c.anchors[frag]
		if !ok {
			return "", fmt.Errorf("$ref %q: no anchor %q in the schema", r, frag)
		}
		ptr = p
	}
	node, ok := toolschema.ResolvePointer(c.root, ptr)
	if !ok {
		return "", fmt.Errorf("$ref %q: nothing at that location in the schema", r)
	}
	switch node.(type) {
	case map[string]any, bool:
	default:
		return "", fmt.Errorf("$ref %q: the location holds no schema", r)
	}
	return ptr, nil
}

// name gives the location at ptr its component name: prefix for the root,
// prefix.<name> for $defs/<name> (or definitions/<name>), and the
// pointer's segments joined by "." otherwise, cleaned to the characters
// OpenAPI allows in component names.
func (c *carrier) name(ptr string) string {
	if ptr == "" {
		c.taken[c.prefix] = true
		return c.prefix
	}
	segs := strings.Split(ptr[1:], "/")
	if len(segs) == 2 && (segs[0] == "$defs" || segs[0] == "definitions") {
		segs = segs[1:]
	}
	for i, s := range segs {
		segs[i] = cleanComponent(toolschema.UnescapePointer(s))
	}
	base := c.prefix + "." + strings.Join(segs, ".")
	name := base
	for n := 2; c.taken[name]; n++ {
		name = base + "_" + strconv.Itoa(n)
	}
	c.taken[name] = true
	return name
}

// cleanComponent keeps the characters of a component name (letters,
// digits, ".", "-", "_"); others become "_".
func cleanComponent(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-' || ch == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// emit returns the document's copy of the schema node.
func (c *carrier) emit(node any) (any, error) {
	switch v := node.(type) {
	case bool:
		if v {
			return map[string]any{}, nil
		}
		return map[string]any{"not": map[string]any{}}, nil
	case map[string]any:
		return c.emitObject(v)
	}
	return nil, fmt.Errorf("a schema must be an object or a boolean, not %s", jsonKind(node))
}

func (c *carrier) emitObject(m map[string]any) (map[string]any, error) {
	out := map[string]any{}
	var refTo any
	if r, ok := m["$ref"].(string); ok {
		ptr, err := c.resolve(r)
		if err != nil {
			return nil, err
		}
		refTo = ref(c.names[ptr])
		if c.draft >= draft7 {
			// Before 2019-09 the siblings of $ref are ignored: keep only
			// annotations, which change no verdict.
			for k, v := range m {
				if annotationKeywords[k] || strings.HasPrefix(k, "x-") {
					out[k] = copyValue(v)
				}
			}
			if len(out) == 0 {
				return refTo.(map[string]any), nil
			}
			out["allOf"] = []any{refTo}
			return out, nil
		}
	}
	for k, v := range m {
		if err := c.emitKeyword(m, k, v, out); err != nil {
			return nil, err
		}
	}
	if refTo != nil {
		if len(out) == 0 {
			return refTo.(map[string]any), nil
		}
		all, _ := out["allOf"].([]any)
		out["allOf"] = append([]any{refTo}, all...)
	}
	return out, nil
}

// emitKeyword sets out's translation of m's keyword k (value v).
func (c *carrier) emitKeyword(m map[string]any, k string, v any, out map[string]any) error {
	switch {
	case k == "$ref", droppedKeywords[k]:
	case k == "items" && c.draft != draft2020:
		return c.emitItems(m, v, out)
	case k == "additionalItems" && c.draft == draft2020:
		out[unknownPrefix+k] = copyValue(v) // not a 2020-12 keyword
	case k == "additionalItems":
		// With an items array, handled above; beside a single items
		// schema (or none), additionalItems has no effect.
	case k == "dependencies" && c.draft != draft2020:
		return c.emitDependencies(v, out)
	case (k == "exclusiveMaximum" || k == "exclusiveMinimum") && c.draft == draft4:
		bound := "maximum"
		if k == "exclusiveMinimum" {
			bound = "minimum"
		}
		if b, ok := v.(bool); ok {
			if b {
				if n, ok := m[bound]; ok {
					out[k] = copyValue(n)
				}
			}
			return nil
		}
		out[k] = copyValue(v)
	case (k == "maximum" || k == "minimum") && c.draft == draft4 && m["exclusive"+strings.ToUpper(k[:1])+k[1:]] == true:
		// Carried as the exclusive bound above.
	case schemaKeywords[k]:
		if b, ok := v.(bool); ok && keepBoolean[k] {
			out[k] = b
			return nil
		}
		s, err := c.emit(v)
		if err != nil {
			return err
		}
		out[k] = s
	case schemaArrayKeywords[k]:
		arr, _ := v.([]any)
		s, err := c.emitArray(arr)
		if err != nil {
			return err
		}
		out[k] = s
	case schemaMapKeywords[k]:
		sm, _ := v.(map[string]any)
		o := make(map[string]any, len(sm))
		for name, sub := range sm {
			s, err := c.emit(sub)
			if err != nil {
				return err
			}
			o[name] = s
		}
		out[k] = o
	case valueKeywords[k], strings.HasPrefix(k, "x-"):
		out[k] = copyValue(v)
	default:
		if _, clash := m[unknownPrefix+k]; !clash {
			out[unknownPrefix+k] = copyValue(v)
		}
	}
	return nil
}

// emitItems translates items before 2020-12: an array is prefixItems
// (with additionalItems as items), a schema stays items.
func (c *carrier) emitItems(m map[string]any, v any, out map[string]any) error {
	if arr, ok := v.([]any); ok {
		s, err := c.emitArray(arr)
		if err != nil {
			return err
		}
		out["prefixItems"] = s
		if ai, ok := m["additionalItems"]; ok {
			s, err := c.emit(ai)
			if err != nil {
				return err
			}
			out["items"] = s
		}
		return nil
	}
	s, err := c.emit(v)
	if err != nil {
		return err
	}
	out["items"] = s
	return nil
}

// emitDependencies splits dependencies (before 2019-09) into
// dependentRequired (arrays) and dependentSchemas (schemas).
func (c *carrier) emitDependencies(v any, out map[string]any) error {
	deps, _ := v.(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(deps)) {
		if arr, ok := deps[name].([]any); ok {
			req, _ := out["dependentRequired"].(map[string]any)
			if req == nil {
				req = map[string]any{}
				out["dependentRequired"] = req
			}
			req[name] = copyValue(arr)
			continue
		}
		s, err := c.emit(deps[name])
		if err != nil {
			return err
		}
		ds, _ := out["dependentSchemas"].(map[string]any)
		if ds == nil {
			ds = map[string]any{}
			out["dependentSchemas"] = ds
		}
		ds[name] = s
	}
	return nil
}

func (c *carrier) emitArray(arr []any) ([]any, error) {
	out := make([]any, len(arr))
	for i, e := range arr {
		s, err := c.emit(e)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// copyValue deep-copies a decoded JSON value, so that documents never share
// maps with the schema they came from.
func copyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		o := make(map[string]any, len(x))
		for k, e := range x {
			o[k] = copyValue(e)
		}
		return o
	case []any:
		o := make([]any, len(x))
		for i, e := range x {
			o[i] = copyValue(e)
		}
		return o
	}
	return v
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
