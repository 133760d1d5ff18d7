package clientgen

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Identifiers are made from MCP names (tool and server names are free-form
// strings) in three steps: split into words, join, then make the result
// legal (a start that is not an identifier start gets a "_" prefix, a
// reserved word a "_" suffix). A word is a run of the characters an
// ECMAScript identifier may hold (Unicode ID_Continue, so 日本 and café stay
// as they are); any other non-ASCII character becomes its own word
// "U<hex>", and ASCII punctuation separates words. How names that clean to
// the same identifier are told apart is assign's.

// words splits s into runs of identifier characters; every non-ASCII rune
// that cannot be in an identifier is a word of its own.
func words(s string) []string {
	var ws []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			ws = append(ws, cur.String())
			cur.Reset()
		}
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			cur.WriteRune(r)
		case r > 0x7f && isIDContinue(r):
			cur.WriteRune(r)
		case r > 0x7f && r != 0xfffd:
			flush()
			ws = append(ws, fmt.Sprintf("U%X", r))
		default:
			flush()
		}
	}
	flush()
	return ws
}

// isIDStart reports whether r may start an ECMAScript identifier (Unicode
// ID_Start; "$" and "_" are the callers').
func isIDStart(r rune) bool {
	return unicode.In(r, unicode.L, unicode.Nl, unicode.Other_ID_Start) &&
		!unicode.In(r, unicode.Pattern_Syntax, unicode.Pattern_White_Space)
}

// isIDContinue reports whether r may continue an identifier (ID_Continue).
func isIDContinue(r rune) bool {
	return isIDStart(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc, unicode.Other_ID_Continue) &&
		!unicode.In(r, unicode.Pattern_Syntax, unicode.Pattern_White_Space)
}

// legalStart prefixes s with "_" unless it starts an identifier.
func legalStart(s string) string {
	r, _ := utf8.DecodeRuneInString(s)
	if r == '_' || r == '$' || isIDStart(r) {
		return s
	}
	return "_" + s
}

func upperFirst(w string) string {
	r, n := utf8.DecodeRuneInString(w)
	if u := unicode.ToUpper(r); u != r && isIDStart(u) {
		return string(u) + w[n:]
	}
	return w
}

// typeName returns the PascalCase form of name for type names, or fallback
// when name has no letters or digits: "take-screenshot" -> "TakeScreenshot".
// Every generated type name carries a suffix or a prefix besides this, so it
// never is, nor shadows, a reserved word or a global type.
func typeName(name, fallback string) string {
	var b strings.Builder
	for _, w := range words(name) {
		b.WriteString(upperFirst(w))
	}
	s := b.String()
	if s == "" {
		s = fallback
	}
	return legalStart(s)
}

// valueName returns the camelCase form of name for namespaces and values:
// "server-everything" -> "serverEverything", "delete" -> "delete_",
// "3d" -> "_3d"; fallback when name has no letters or digits.
func valueName(name, fallback string) string {
	var b strings.Builder
	for i, w := range words(name) {
		if i > 0 {
			w = upperFirst(w)
		}
		b.WriteString(w)
	}
	s := b.String()
	if s == "" {
		s = fallback
	}
	s = legalStart(s)
	if reserved[s] {
		s += "_"
	}
	return s
}

// reserved holds the words a TypeScript namespace or value may not be named,
// or had better not be: ECMAScript reserved words, strict-mode and module
// reserved words, and TypeScript's type and contextual keywords.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		break case catch class const continue debugger default delete do else
		enum export extends false finally for function if import in instanceof
		new null return super switch this throw true try typeof var void while
		with implements interface let package private protected public static
		yield await arguments eval
		any unknown never string number boolean bigint symbol object undefined
		as async declare module namespace type global require get set of from
		is keyof readonly infer asserts abstract constructor satisfies override
		out accessor unique intrinsic using`) {
		m[w] = true
	}
	return m
}()

// namer hands out identifiers unique within one scope.
type namer struct {
	used map[string]bool
}

func newNamer() *namer { return &namer{used: map[string]bool{}} }

// take returns base, or base_2, base_3, … : the first not taken yet.
func (n *namer) take(base string) string {
	return n.takeWith(base)
}

// takeWith returns the first of base, base_2, … that is free with each of
// suffixes appended (none: as it is), and takes those.
func (n *namer) takeWith(base string, suffixes ...string) string {
	if len(suffixes) == 0 {
		suffixes = []string{""}
	}
	for i := 1; ; i++ {
		s := base
		if i > 1 {
			s = base + "_" + strconv.Itoa(i)
		}
		if !slices.ContainsFunc(suffixes, func(x string) bool { return n.used[s+x] }) {
			for _, x := range suffixes {
				n.used[s+x] = true
			}
			return s
		}
	}
}

// A naming is the identifier assign gave one original name.
type naming struct {
	Name string
	// Shares are the other originals that clean to the same identifier;
	// nil when none does.
	Shares []string
}

// assign names originals (several may be equal) in n with clean, so that
// each name depends on as little else as possible:
//
//   - an original that is its own clean form (exact: getItem) has it;
//   - an original alone with its clean form (get-item, no other) has it;
//   - originals that share a clean form and are not exact each have it
//     with "_" and a hash of the original (getItem_1a2b3c), whatever the
//     others are called and in whatever order they come.
//
// rank says how exact an original is (0 = not at all); within a clean form
// the one original of the highest rank above 0 wins it. suffixes are what
// n must find free after the name (see takeWith). The names are unique in
// n; a clash left (a reserved word taken, a hash that is another exact
// name) gets _2, _3.
func assign(n *namer, originals []string, clean func(string) string, rank func(string) int, suffixes ...string) []naming {
	groups := map[string][]string{}
	for _, o := range originals {
		c := clean(o)
		if !slices.Contains(groups[c], o) {
			groups[c] = append(groups[c], o)
		}
	}
	out := make([]naming, len(originals))
	order := make([]int, len(originals))
	for i := range order {
		order[i] = i
	}
	base := make([]string, len(originals))
	for i, o := range originals {
		c := clean(o)
		g := groups[c]
		if len(g) > 1 {
			out[i].Shares = slices.DeleteFunc(slices.Clone(g), func(x string) bool { return x == o })
		}
		base[i] = c
		if len(g) > 1 && !wins(o, g, rank) {
			sum := sha256.Sum256([]byte(o))
			base[i] = c + "_" + hex.EncodeToString(sum[:3])
		}
	}
	// The bare names first, so a hash or a reserved word's _2 never takes
	// one; then in the originals' sorted order.
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(rank(originals[b]), rank(originals[a])), strings.Compare(originals[a], originals[b]))
	})
	for _, i := range order {
		out[i].Name = n.takeWith(base[i], suffixes...)
	}
	return out
}

// wins reports whether o has the one highest rank above 0 in its group.
func wins(o string, group []string, rank func(string) int) bool {
	r := rank(o)
	if r == 0 {
		return false
	}
	for _, x := range group {
		if x != o && rank(x) >= r {
			return false
		}
	}
	return true
}

// valueRank ranks a name for a value: 1 when it is its own value name.
func valueRank(name string) int {
	if valueName(name, "") == name {
		return 1
	}
	return 0
}

// typeRank ranks a name for a type: 2 when it is its own type name, 1 when
// it is its own value name (getItem over get-item for GetItem).
func typeRank(name string) int {
	if typeName(name, "") == name {
		return 2
	}
	return valueRank(name)
}

// ValueName is the identifier the generated client gives a server or a
// tool named name (fallback when name has no letters or digits), unless
// another name cleans to the same one: "server-everything" is
// serverEverything, "get-sum" getSum.
func ValueName(name, fallback string) string { return valueName(name, fallback) }
