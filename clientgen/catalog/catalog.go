package catalog

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/orderedjson"
	"mcpx.dev/mcpx/internal/toolschema"
)

// Catalog is a compact view of many servers' tools within a budget of
// tokens (see [New]).
type Catalog struct {
	// Budget is the budget it was built for, in tokens; Used is what its
	// signatures cost.
	Budget int
	Used   int
	// Servers lists every server, by name, whatever the budget.
	Servers []Server
	// Signatures are the signatures shown, grouped by server in the order
	// of Servers, each server's in its rank order.
	Signatures []Signature
}

// Server is one server of a [Catalog]: how many tools it has, and how many
// of their signatures the budget let in.
type Server struct {
	Server string
	Tools  int
	Shown  int
}

// Signature is one tool's one-line signature and its cost in tokens.
type Signature struct {
	Server string
	Name   string
	Text   string
	Cost   int
}

// New builds the catalog of tools within budget tokens, a token being
// four characters of a signature line (its newline included, rounded up).
//
// Every server is listed with its tool count, at no cost, so that none is
// invisible even at budget 0. Each server's signatures are ranked cheapest
// first (ties by name) or, with bias terms, by their [Search] score against
// the terms (any term counts; ties cheapest first, then by name). The
// budget is then spent round-robin: a pass takes the next signature of each
// server in name order, and passes go on while one takes something. A server
// whose next signature does not fit is done, so a server's shown signatures
// are always its best ranked ones. The result depends only on its inputs.
func New(tools []Tool, budget int, bias []string) Catalog {
	tools = sortTools(tools)
	c := Catalog{Budget: max(budget, 0), Servers: []Server{}, Signatures: []Signature{}}
	bias = cleanTerms(bias)
	var ranked [][]Signature
	for i := 0; i < len(tools); {
		j := i
		for j < len(tools) && tools[j].Server == tools[i].Server {
			j++
		}
		ranked = append(ranked, rankSignatures(tools[i:j], bias))
		c.Servers = append(c.Servers, Server{Server: tools[i].Server, Tools: j - i})
		i = j
	}
	taken := make([][]Signature, len(ranked))
	done := make([]bool, len(ranked))
	for progress := true; progress; {
		progress = false
		for s, sigs := range ranked {
			k := len(taken[s])
			if done[s] || k == len(sigs) {
				continue
			}
			if c.Used+sigs[k].Cost > c.Budget {
				done[s] = true
				continue
			}
			c.Used += sigs[k].Cost
			taken[s] = append(taken[s], sigs[k])
			progress = true
		}
	}
	for s := range taken {
		c.Servers[s].Shown = len(taken[s])
		c.Signatures = append(c.Signatures, taken[s]...)
	}
	return c
}

// rankSignatures ranks the signatures of one server's tools.
func rankSignatures(tools []Tool, bias []string) []Signature {
	type ranked struct {
		sig   Signature
		score int
	}
	rs := make([]ranked, len(tools))
	for i, t := range tools {
		text := signature(t)
		rs[i] = ranked{sig: Signature{Server: t.Server, Name: t.Name, Text: text, Cost: (len(text) + 1 + 3) / 4}}
		for _, term := range bias {
			rs[i].score += scoreTerm(t, term).Points
		}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.sig.Cost, b.sig.Cost), cmp.Compare(a.sig.Name, b.sig.Name))
	})
	out := make([]Signature, len(rs))
	for i, r := range rs {
		out[i] = r.sig
	}
	return out
}

// String renders the catalog as text: one line per server, a blank line,
// then one line per signature.
func (c Catalog) String() string {
	var b strings.Builder
	for _, s := range c.Servers {
		fmt.Fprintf(&b, "%s: %d tools", s.Server, s.Tools)
		if s.Shown < s.Tools {
			fmt.Fprintf(&b, ", %d shown", s.Shown)
		}
		b.WriteByte('\n')
	}
	if len(c.Signatures) > 0 {
		b.WriteByte('\n')
	}
	for _, s := range c.Signatures {
		b.WriteString(s.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// signature is a tool's compact one-line TypeScript-like signature:
// server.tool({a: string, b?: number}), with the top-level properties of its
// input schema, each typed shallowly (see shallowType). The properties and
// which are required are read through a root $ref, allOf, anyOf and oneOf
// (internal/toolschema, the client generator's rule), so a tool that needs
// arguments never shows as tool(); one that needs some but declares none
// shows as tool({...}).
func signature(t Tool) string {
	var b strings.Builder
	if t.Server != "" {
		b.WriteString(t.Server + ".")
	}
	b.WriteString(t.Name + "(")
	root, err := orderedjson.Decode(toolschema.Normalize(t.InputSchema)) // one dialect: 2020-12
	if err == nil && root != nil {
		args := toolschema.Arguments(root)
		if len(args.Props) > 0 {
			b.WriteString("{")
			for i, p := range args.Props {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(p.Name)
				if !p.Required {
					b.WriteString("?")
				}
				b.WriteString(": " + shallowType(root, p.Schema, 0))
			}
			b.WriteString("}")
		} else if args.Required {
			b.WriteString("{...}")
		}
	}
	b.WriteString(")")
	return b.String()
}

// maxShallow bounds how many $refs and combinators shallowType follows.
const maxShallow = 4

// shallowType names a property schema's type in a few characters: a JSON
// type, a type array or an anyOf or oneOf of such as a union, a short enum
// as its literals, an array as <items>[], a $ref as its target's type;
// anything else is "any".
func shallowType(root, v any, depth int) string {
	o, ok := v.(*orderedjson.Object)
	if !ok || depth > maxShallow {
		return "any"
	}
	if vals, ok := o.Arr("enum"); ok && len(vals) > 0 && len(vals) <= 4 {
		lits := make([]string, 0, len(vals))
		for _, v := range vals {
			lits = append(lits, orderedjson.Compact(v))
		}
		return strings.Join(lits, "|")
	}
	if ref, ok := o.Str("$ref"); ok {
		if target, ok := toolschema.Resolve(root, ref); ok {
			return shallowType(root, target, depth+1)
		}
		return "any"
	}
	types := typeNames(o)
	if len(types) == 0 {
		return shallowAlternatives(root, o, depth)
	}
	for i, t := range types {
		switch t {
		case "integer":
			types[i] = "number"
		case "array":
			if prefix, ok := o.Arr("prefixItems"); ok {
				types[i] = shallowTuple(o, prefix)
				continue
			}
			types[i] = shallowItem(o.Obj("items")) + "[]"
		}
	}
	return strings.Join(types, "|")
}

// shallowItem is an array's items type when it is a single scalar type;
// "any" otherwise.
func shallowItem(it *orderedjson.Object) string {
	if it != nil {
		if st := typeNames(it); len(st) == 1 && st[0] != "array" && st[0] != "object" {
			return strings.Replace(st[0], "integer", "number", 1)
		}
	}
	return "any"
}

// shallowTuple is a tuple's type as the TypeScript client writes it, its
// elements typed as shallowItem does: [string, number?, ...any[]], its
// elements optional from minItems on, the rest (items) after them.
func shallowTuple(o *orderedjson.Object, prefix []any) string {
	minItems := 0
	if n, ok := o.Vals["minItems"].(json.Number); ok {
		if m, err := strconv.Atoi(string(n)); err == nil {
			minItems = m
		}
	}
	var es []string
	for i, e := range prefix {
		it, _ := e.(*orderedjson.Object)
		el := shallowItem(it)
		if i >= minItems {
			el += "?"
		}
		es = append(es, el)
	}
	if rest, ok := o.Vals["items"]; !ok || rest != false {
		it, _ := rest.(*orderedjson.Object)
		es = append(es, "..."+shallowItem(it)+"[]")
	}
	return "[" + strings.Join(es, ", ") + "]"
}

// shallowAlternatives is the union of an untyped schema's anyOf or oneOf
// branches, each typed shallowly; "any" when a branch is.
func shallowAlternatives(root any, o *orderedjson.Object, depth int) string {
	for _, kw := range []string{"anyOf", "oneOf"} {
		ms, ok := o.Arr(kw)
		if !ok || len(ms) == 0 {
			continue
		}
		var alts []string
		for _, m := range ms {
			a := shallowType(root, m, depth+1)
			if a == "any" {
				return "any"
			}
			for _, part := range strings.Split(a, "|") {
				if !slices.Contains(alts, part) {
					alts = append(alts, part)
				}
			}
		}
		return strings.Join(alts, "|")
	}
	return "any"
}

// typeNames is a schema's type keyword as a list.
func typeNames(o *orderedjson.Object) []string {
	if t, ok := o.Str("type"); ok {
		return []string{t}
	}
	return o.Strings("type")
}
