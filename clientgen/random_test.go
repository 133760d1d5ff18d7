package clientgen_test

import (
	"fmt"
	"strconv"
	"strings"
)

// schemaGen builds random JSON Schemas from the keywords the compiler
// knows, including $refs into $defs that may form cycles of any kind. It is
// a small xorshift generator, so a seed always gives the same schema.
type schemaGen struct {
	seed uint64
	defs int // how many $defs the root declares
}

func (g *schemaGen) next() uint64 {
	g.seed ^= g.seed << 13
	g.seed ^= g.seed >> 7
	g.seed ^= g.seed << 17
	return g.seed
}

func (g *schemaGen) intn(n int) int { return int(g.next() % uint64(n)) }

var oddNames = []string{"a", "take-screenshot", "a.b", "a_b", "delete", "3d", "café", "", "x y", "quote\"d", "*/", "constructor", "__proto__", "日本"}

func (g *schemaGen) name() string { return oddNames[g.intn(len(oddNames))] }

// root returns a schema with up to three $defs.
func (g *schemaGen) root() string {
	g.defs = g.intn(4)
	var defs []string
	for i := range g.defs {
		defs = append(defs, fmt.Sprintf(`"D%d": %s`, i, g.schema(3)))
	}
	body := g.schema(4)
	if len(defs) == 0 || body[0] != '{' {
		return body
	}
	sep := ","
	if body == "{}" {
		sep = ""
	}
	return `{"$defs": {` + strings.Join(defs, ", ") + `}` + sep + body[1:]
}

func (g *schemaGen) literal() string {
	return []string{`"s"`, `1`, `-2.5`, `true`, `null`, `"*/"`, `[1, "a"]`, `{"k": 1}`, `1e400`}[g.intn(9)]
}

func (g *schemaGen) list(depth, max int) string {
	var ss []string
	for range g.intn(max) + 1 {
		ss = append(ss, g.schema(depth-1))
	}
	return "[" + strings.Join(ss, ", ") + "]"
}

func (g *schemaGen) schema(depth int) string {
	if depth <= 0 {
		return []string{`{"type": "string"}`, `true`, `false`, `{}`, `{"type": "integer"}`}[g.intn(5)]
	}
	switch g.intn(16) {
	case 0:
		return `{"type": ` + []string{`"string"`, `"number"`, `"boolean"`, `"null"`, `["string", "null"]`, `[]`, `"nope"`}[g.intn(7)] + `}`
	case 1:
		return `{"enum": [` + g.literal() + `, ` + g.literal() + `]}`
	case 2:
		return `{"const": ` + g.literal() + `}`
	case 3, 4:
		var props []string
		var req []string
		for i := range g.intn(4) {
			n := g.name() + strconv.Itoa(i%2)
			props = append(props, strconv.Quote(n)+": "+g.schema(depth-1))
			if g.intn(2) == 0 {
				req = append(req, strconv.Quote(n))
			}
		}
		ap := []string{``, `, "additionalProperties": false`, `, "additionalProperties": true`, `, "additionalProperties": ` + g.schema(depth-1), `, "patternProperties": {"^x": ` + g.schema(depth-1) + `}`}[g.intn(5)]
		return `{"type": "object", "properties": {` + strings.Join(props, ", ") + `}, "required": [` + strings.Join(req, ", ") + `]` + ap + `}`
	case 5:
		return `{"type": "array", "items": ` + g.schema(depth-1) + `}`
	case 6:
		items := []string{``, `, "items": false`, `, "items": ` + g.schema(depth-1)}[g.intn(3)]
		return fmt.Sprintf(`{"type": "array", "prefixItems": %s, "minItems": %d%s}`, g.list(depth, 3), g.intn(3), items)
	case 7:
		return `{"anyOf": ` + g.list(depth, 3) + `}`
	case 8:
		return `{"oneOf": ` + g.list(depth, 3) + `, "nullable": true}`
	case 9:
		return `{"allOf": ` + g.list(depth, 3) + `}`
	case 10, 11:
		if g.defs == 0 {
			return `{"$ref": "#"}`
		}
		return fmt.Sprintf(`{"$ref": "#/$defs/D%d"}`, g.intn(g.defs))
	case 12:
		return `{"$ref": "#", "properties": {"p": ` + g.schema(depth-1) + `}}`
	case 13:
		return `{"type": "object", "additionalProperties": ` + g.schema(depth-1) + `, "description": "d */ e", "default": ` + g.literal() + `}`
	case 14:
		return `{"not": ` + g.schema(depth-1) + `, "type": "string"}`
	}
	return `{"$ref": "#/$defs/missing"}`
}
