package clientgen

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/orderedjson"
	"mcpx.dev/mcpx/internal/toolschema"
)

// object is a decoded schema object: its members in the author's order, so
// that generated members follow it.
type object = orderedjson.Object

// A compiler turns one schema (a tool's inputSchema or outputSchema) into
// TypeScript declarations: the root type and one named type per location a
// $ref points to.
type compiler struct {
	server, tool, schema string // for problems
	names                *namer // the namespace's identifiers
	indent               int    // of the declarations
	// depth collapses object types nested deeper than it (compileOptions);
	// hints are the root's properties' producer hints (producerHints).
	depth int
	hints map[string]string

	root     any
	rootName string
	named    map[string]*namedType // by JSON Pointer ("" is the root)
	order    []*namedType          // in the order they were first referenced
	cur      *namedType            // the type being generated
	problems []Problem
}

// namedType is a declaration: the root or a $ref target.
type namedType struct {
	ptr    string
	name   string
	schema any
	body   expr
	// direct holds the named types this one refers to outside any object
	// member, index signature, array or tuple element: TypeScript resolves
	// those eagerly, so a cycle through them is an error ("type alias
	// circularly references itself") and must be broken.
	direct []*namedType
}

// expr is a TypeScript type expression with its precedence, so that
// composing expressions adds only the parentheses needed.
type expr struct {
	s    string
	prec int
	// unknown marks `unknown`, with or without a comment.
	unknown bool
}

const (
	precUnion = iota
	precIntersection
	precPrimary
)

func prim(s string) expr { return expr{s: s, prec: precPrimary} }

// maxIndexUnion bounds the length of an index signature's type; beyond it
// the signature is `unknown`.
const maxIndexUnion = 160

// maxSchemaDepth bounds how deep generation descends into one schema.
const maxSchemaDepth = 64

var unknownExpr = expr{s: "unknown", prec: precPrimary, unknown: true}

// compile returns the declarations for one schema, named name; doc is the
// tool's description (input side) to put above the root.
func (c *compiler) compile(name string, raw json.RawMessage, doc string) (decls []string) {
	c.rootName = name
	c.named = map[string]*namedType{}
	root := &namedType{ptr: "", name: name}
	c.named[""] = root
	c.order = []*namedType{root}
	defer func() {
		if r := recover(); r != nil {
			c.problem("", fmt.Sprintf("internal error: %v", r))
			decls = []string{c.decl(name, doc, c.unknown("", "the schema could not be compiled"))}
		}
	}()

	if len(raw) == 0 || string(raw) == "null" {
		if c.schema == "inputSchema" {
			c.problem("", "the tool has no inputSchema")
		}
		return []string{c.decl(name, doc, expr{s: "unknown /* no " + c.schema + " */", prec: precPrimary, unknown: true})}
	}
	v, err := orderedjson.Decode(toolschema.Normalize(raw)) // one dialect: 2020-12
	if err != nil {
		return []string{c.decl(name, doc, c.unknown("", err.Error()))}
	}
	c.root = v
	root.schema = v
	for i := 0; i < len(c.order); i++ { // order grows as $refs are met
		nt := c.order[i]
		c.cur = nt
		nt.body = c.gen(nt.schema, nt.ptr, c.indent, false, nil, 0)
	}
	c.breakCycles()
	for _, nt := range c.order {
		d := schemaDoc(nt.schema)
		if nt == root && doc != "" {
			d = strings.TrimSpace(doc + "\n\n" + d)
		}
		decls = append(decls, c.decl(nt.name, d, nt.body))
	}
	return decls
}

// decl writes `export type name = body;` with doc as its JSDoc.
func (c *compiler) decl(name, doc string, body expr) string {
	ind := strings.Repeat("  ", c.indent)
	return jsdoc(doc, ind) + ind + "export type " + name + " = " + body.s + ";\n"
}

func (c *compiler) problem(ptr, msg string) {
	c.problems = append(c.problems, Problem{Server: c.server, Tool: c.tool, Schema: c.schema, Pointer: ptr, Message: msg})
}

// unknown records a problem at ptr and returns `unknown` commented with why.
func (c *compiler) unknown(ptr, why string) expr {
	c.problem(ptr, why)
	return expr{s: "unknown /* " + commentText(why) + " */", prec: precPrimary, unknown: true}
}

// note returns `unknown` commented with why, for a constraint the type
// leaves out: the type is looser than the schema, which is not a problem.
func note(why string) expr {
	return expr{s: "unknown /* " + commentText(why) + " */", prec: precPrimary, unknown: true}
}

// narrowing are the keywords that narrow a value's type in ways TypeScript
// cannot say; the generated type leaves them out, with a comment. (Bounds,
// lengths and patterns are left out silently: no TypeScript type has them.)
var narrowing = []string{"not", "if", "dependentSchemas", "dependentRequired", "unevaluatedProperties", "unevaluatedItems", "propertyNames", "contains"}

// breakCycles replaces by `unknown` every named type that refers to itself
// through direct references only (`type A = B | null; type B = A`), which
// TypeScript refuses; such a schema has no finite meaning anyway.
func (c *compiler) breakCycles() {
	for _, nt := range c.order {
		if !c.reaches(nt, nt) {
			continue
		}
		nt.body = c.unknown(nt.ptr, "the schema refers to itself without an object or array in between")
	}
}

// reaches reports whether to is reachable from from by one or more direct
// references.
func (c *compiler) reaches(from, to *namedType) bool {
	seen := map[*namedType]bool{}
	stack := slices.Clone(from.direct)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == to {
			return true
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		stack = append(stack, n.direct...)
	}
	return false
}

// gen returns the type of schema s found at ptr. ind is the indentation of
// the line the type starts on; deferred says whether s sits inside an
// object member or array element; inherited are property names that an
// enclosing schema requires (allOf, anyOf, oneOf siblings share them).
func (c *compiler) gen(s any, ptr string, ind int, deferred bool, inherited []string, depth int) expr {
	if depth > maxSchemaDepth {
		return c.unknown(ptr, fmt.Sprintf("schema nested deeper than %d levels", maxSchemaDepth))
	}
	switch v := s.(type) {
	case bool:
		if v {
			return unknownExpr
		}
		return prim("never")
	case *object:
		return c.genObject(v, ptr, ind, deferred, inherited, depth)
	}
	return c.unknown(ptr, "a schema must be an object or a boolean")
}

func (c *compiler) genObject(o *object, ptr string, ind int, deferred bool, inherited []string, depth int) expr {
	var parts []expr // intersected
	for _, kw := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		v, ok := o.Get(kw)
		if !ok {
			continue
		}
		ref, isStr := v.(string)
		switch {
		case !isStr:
			parts = append(parts, c.unknown(ptr+"/"+kw, kw+" must be a string"))
		case kw != "$ref" && ref != "#":
			// A dynamic reference other than to the root depends on
			// the evaluation path; leaving it out only loosens the type.
			parts = append(parts, c.unknown(ptr+"/"+kw, kw+" "+strconv.Quote(ref)+" is not supported"))
		default:
			parts = append(parts, c.ref(ref, ptr+"/"+kw, deferred))
		}
	}
	// The property names required here: by an enclosing schema, by this
	// one, or by one of its allOf members (all of which apply to the same
	// value). anyOf and oneOf variants inherit them too.
	req := slices.Concat(inherited, o.Strings("required"))
	if ms, ok := o.Arr("allOf"); ok {
		for _, m := range ms {
			if mo, ok := m.(*object); ok {
				req = append(req, mo.Strings("required")...)
			}
		}
	}

	if b, ok := c.base(o, ptr, ind, deferred, req, depth); ok {
		parts = append(parts, b)
	}
	if ms, ok := o.Arr("allOf"); ok {
		for i, m := range ms {
			parts = append(parts, c.gen(m, fmt.Sprintf("%s/allOf/%d", ptr, i), ind, deferred, req, depth+1))
		}
		if p, ok := requiredElsewhere(o, ms, req); ok {
			parts = append(parts, p)
		}
	} else if o.Has("allOf") {
		parts = append(parts, c.unknown(ptr+"/allOf", "allOf must be an array"))
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		ms, ok := o.Arr(kw)
		if !ok {
			if o.Has(kw) {
				parts = append(parts, c.unknown(ptr+"/"+kw, kw+" must be an array"))
			}
			continue
		}
		var alts []expr
		for i, m := range ms {
			alts = append(alts, c.gen(m, fmt.Sprintf("%s/%s/%d", ptr, kw, i), ind, deferred, req, depth+1))
		}
		if len(alts) == 0 {
			parts = append(parts, c.unknown(ptr+"/"+kw, kw+" is empty"))
			continue
		}
		parts = append(parts, union(alts))
	}
	for _, kw := range narrowing {
		if o.Has(kw) {
			parts = append(parts, note(kw+" is not expressed"))
		}
	}
	t := intersection(parts)
	if n, _ := o.Get("nullable"); n == true { // OpenAPI 3.0
		t = union([]expr{t, prim("null")})
	}
	return t
}

// requiredElsewhere returns, for an allOf with a $ref member, the object
// type `{ name: unknown; … }` of the names required at this level that no
// inline schema here declares: they are declared behind a $ref, which is a
// named type shared with other uses, so the requirement is intersected
// instead of lifted into it.
func requiredElsewhere(o *object, members []any, req []string) (expr, bool) {
	declared := map[string]bool{}
	hasRef := false
	for _, s := range append([]any{o}, members...) {
		so, ok := s.(*object)
		if !ok {
			continue
		}
		hasRef = hasRef || so.Has("$ref")
		if props := so.Obj("properties"); props != nil {
			for _, k := range props.Keys {
				declared[k] = true
			}
		}
	}
	var lines []string
	for _, k := range req {
		if !declared[k] {
			declared[k] = true
			lines = append(lines, propKey(k)+": unknown")
		}
	}
	if !hasRef || len(lines) == 0 {
		return expr{}, false
	}
	return prim("{ " + strings.Join(lines, "; ") + " }"), true
}

// base returns the type given by const, enum or type (or, without type, the
// one implied by object or array keywords); ok is false when the schema sets
// none of them.
func (c *compiler) base(o *object, ptr string, ind int, deferred bool, req []string, depth int) (expr, bool) {
	types, typed := c.types(o, ptr)
	if v, ok := o.Get("const"); ok {
		return c.literals([]any{v}, types, typed, ptr+"/const"), true
	}
	if v, ok := o.Get("enum"); ok {
		vs, isArr := v.([]any)
		if !isArr {
			return c.unknown(ptr+"/enum", "enum must be an array"), true
		}
		return c.literals(vs, types, typed, ptr+"/enum"), true
	}
	if !typed {
		switch {
		case o.Has("properties") || o.Has("additionalProperties") || o.Has("patternProperties"):
			types = []string{"object"}
		case o.Has("items") || o.Has("prefixItems"):
			types = []string{"array"}
		default:
			return expr{}, false
		}
	}
	var alts []expr
	for _, t := range types {
		switch t {
		case "string":
			alts = append(alts, prim("string"))
		case "number", "integer":
			alts = append(alts, prim("number"))
		case "boolean":
			alts = append(alts, prim("boolean"))
		case "null":
			alts = append(alts, prim("null"))
		case "array":
			alts = append(alts, c.array(o, ptr, ind, depth))
		case "object":
			alts = append(alts, c.object(o, ptr, ind, req, depth))
		default:
			alts = append(alts, c.unknown(ptr+"/type", "unknown type "+strconv.Quote(t)))
		}
	}
	if len(alts) == 0 {
		return prim("never"), true // "type": [] admits nothing
	}
	return union(alts), true
}

// types returns the names in "type" (a string or an array of strings).
func (c *compiler) types(o *object, ptr string) ([]string, bool) {
	v, ok := o.Get("type")
	if !ok {
		return nil, false
	}
	switch v := v.(type) {
	case string:
		return []string{v}, true
	case []any:
		var ts []string
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				c.problem(ptr+"/type", "type must hold strings; the others were left out")
				return nil, false
			}
			if !slices.Contains(ts, s) {
				ts = append(ts, s)
			}
		}
		return ts, true
	}
	c.problem(ptr+"/type", "type must be a string or an array; it was left out")
	return nil, false
}

// object returns the object type of o: its properties in document order,
// optional unless required (by o or an enclosing allOf, anyOf or oneOf),
// and an index signature for additionalProperties and patternProperties.
func (c *compiler) object(o *object, ptr string, ind int, req []string, depth int) expr {
	if c.depth > 0 && ind-c.indent > c.depth {
		return prim(fmt.Sprintf("{ [key: string]: unknown } /* an object nested deeper than --depth %d: mcpx types without --depth shows it */", c.depth))
	}
	in := strings.Repeat("  ", ind+1)
	atRoot := c.cur != nil && c.cur.ptr == "" && ind == c.indent
	var (
		lines    []string
		members  []expr
		optional bool
		seen     = map[string]bool{}
	)
	if props := o.Obj("properties"); props != nil {
		for _, k := range props.Keys {
			seen[k] = true
			ps := props.Vals[k]
			t := c.gen(ps, ptr+"/properties/"+toolschema.EscapePointer(k), ind+1, true, nil, depth+1)
			members = append(members, t)
			opt := "?"
			if slices.Contains(req, k) {
				opt = ""
			} else {
				optional = true
			}
			d := schemaDoc(ps)
			if h := c.hints[k]; atRoot && h != "" && slices.Contains(req, k) {
				d = strings.TrimSpace(d + "\n\n" + h)
			}
			if k == "__proto__" {
				d = strings.TrimSpace(d + "\n\n" + protoNote)
			}
			lines = append(lines, jsdoc(d, in)+in+propKey(k)+opt+": "+t.s+";")
		}
	} else if o.Has("properties") {
		c.problem(ptr+"/properties", "properties must be an object; it was left out")
	}
	ap, hasAP := o.Get("additionalProperties")
	for _, k := range o.Strings("required") {
		if !seen[k] && ap != false {
			seen[k] = true
			members = append(members, unknownExpr)
			lines = append(lines, in+propKey(k)+": unknown;")
		}
	}
	var index []expr
	if pp := o.Obj("patternProperties"); pp != nil {
		for _, k := range pp.Keys {
			index = append(index, c.gen(pp.Vals[k], ptr+"/patternProperties/"+toolschema.EscapePointer(k), ind+1, true, nil, depth+1))
		}
	}
	switch {
	case ap == false:
	case hasAP && ap != true:
		index = append(index, c.gen(ap, ptr+"/additionalProperties", ind+1, true, nil, depth+1))
	case hasAP || len(members) == 0 || len(index) > 0:
		// Other keys are free: said so, a free-form object, or keys that
		// match no pattern. (Without additionalProperties, members alone
		// keep TypeScript's excess-property check, which catches typos.)
		index = append(index, unknownExpr)
	}
	if len(index) > 0 {
		// TypeScript requires every member to fit the index signature,
		// so their types join it; written out only while short, since a
		// nested type would be written twice per level (exponentially).
		if len(members) > 0 {
			index = append(index, members...)
			if optional {
				index = append(index, prim("undefined"))
			}
		}
		u := union(index)
		if len(u.s) > maxIndexUnion || strings.Contains(u.s, "\n") {
			u = note("the other properties' type joined with the members' types is too long to write")
		}
		lines = append(lines, in+"[key: string]: "+u.s+";")
	}
	if len(lines) == 0 {
		return prim("{ [key: string]: never }")
	}
	return prim("{\n" + strings.Join(lines, "\n") + "\n" + strings.Repeat("  ", ind) + "}")
}

// protoNote is the doc of a __proto__ member: JavaScript reads the key
// in an object literal as the prototype, so the value must be given as a
// computed key to be sent at all.
const protoNote = `Write this member as a computed key, { ["__proto__"]: value }: an object literal's __proto__ (quoted or not) sets the prototype, and JSON.stringify would leave it out.`

// array returns the array or tuple type of o: prefixItems (or draft 7's
// array-valued items) as tuple elements, optional from minItems on, then
// items (or additionalItems) as the rest.
func (c *compiler) array(o *object, ptr string, ind int, depth int) expr {
	prefix, hasPrefix := o.Arr("prefixItems")
	prefixKw, restKw := "prefixItems", "items"
	if items, ok := o.Arr("items"); ok {
		prefix, hasPrefix, prefixKw, restKw = items, true, "items", "additionalItems"
	}
	rest, hasRest := o.Get(restKw)
	elem := func(s any, p string) expr {
		return paren(c.gen(s, p, ind, true, nil, depth+1), precPrimary)
	}
	if !hasPrefix {
		switch {
		case !hasRest || rest == true:
			return prim("unknown[]")
		case rest == false:
			return prim("[]")
		}
		return prim(elem(rest, ptr+"/"+restKw).s + "[]")
	}
	minItems := 0
	if n, ok := o.Vals["minItems"].(json.Number); ok {
		if m, err := strconv.Atoi(string(n)); err == nil && m > 0 {
			minItems = m
		}
	}
	var es []string
	for i, s := range prefix {
		e := elem(s, fmt.Sprintf("%s/%s/%d", ptr, prefixKw, i)).s
		if i >= minItems {
			e += "?"
		}
		es = append(es, e)
	}
	switch {
	case !hasRest || rest == true:
		es = append(es, "...unknown[]")
	case rest != false:
		es = append(es, "..."+elem(rest, ptr+"/"+restKw).s+"[]")
	}
	return prim("[" + strings.Join(es, ", ") + "]")
}

// ref returns the named type for a $ref, declaring it on first use.
func (c *compiler) ref(ref, ptr string, deferred bool) expr {
	if !strings.HasPrefix(ref, "#") {
		return c.unknown(ptr, "$ref "+strconv.Quote(ref)+" points outside the schema")
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return c.unknown(ptr, "$ref "+strconv.Quote(ref)+" is not a valid URI fragment")
	}
	if frag != "" && frag[0] != '/' {
		return c.unknown(ptr, "$ref "+strconv.Quote(ref)+": anchors are not supported")
	}
	nt := c.named[frag]
	if nt == nil {
		target, ok := toolschema.ResolvePointer(c.root, frag)
		if !ok {
			return c.unknown(ptr, "$ref "+strconv.Quote(ref)+" does not resolve")
		}
		segs := strings.Split(frag, "/")
		nt = &namedType{ptr: frag, schema: target,
			name: c.names.take(c.rootName + typeName(toolschema.UnescapePointer(segs[len(segs)-1]), "Def"))}
		c.named[frag] = nt
		c.order = append(c.order, nt)
	}
	if !deferred {
		c.cur.direct = append(c.cur.direct, nt)
	}
	return prim(nt.name)
}

// paren wraps e in parentheses when its precedence is below min.
func paren(e expr, min int) expr {
	if e.prec >= min {
		return e
	}
	return expr{s: "(" + e.s + ")", prec: precPrimary}
}

// union joins alternatives: never drops out, and unknown absorbs the rest.
func union(alts []expr) expr {
	var out []expr
	for _, a := range alts {
		if a.unknown {
			return a
		}
		if a.s == "never" || slices.ContainsFunc(out, func(e expr) bool { return e.s == a.s }) {
			continue
		}
		out = append(out, a)
	}
	switch len(out) {
	case 0:
		return prim("never")
	case 1:
		return out[0]
	}
	ss := make([]string, len(out))
	for i, a := range out {
		ss[i] = a.s // a union needs no parentheses inside a union
	}
	return expr{s: strings.Join(ss, " | "), prec: precUnion}
}

// intersection joins parts: plain unknown drops out (an unknown with a
// comment stays, last, so the comment is seen), never absorbs the rest, and
// no parts at all is unknown.
func intersection(parts []expr) expr {
	var out, comments []expr
	for _, p := range parts {
		switch {
		case p.s == "never":
			return p
		case p.s == "unknown":
			continue
		case p.unknown:
			comments = append(comments, p)
			continue
		}
		if !slices.ContainsFunc(out, func(e expr) bool { return e.s == p.s }) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		if len(comments) > 0 {
			return comments[0]
		}
		return unknownExpr
	}
	out = append(out, comments...)
	if len(out) == 1 {
		return out[0]
	}
	ss := make([]string, len(out))
	for i, p := range out {
		ss[i] = paren(p, precPrimary).s
	}
	return expr{s: strings.Join(ss, " & "), prec: precIntersection}
}
