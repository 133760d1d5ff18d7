package clientgen

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/tsident"
)

// Identifiers are made from MCP names as package internal/tsident makes
// them (tsident.Value for namespaces and values; typeName below for types).
// How names that clean to the same identifier are told apart is assign's.

// typeName returns the PascalCase form of name for type names, or fallback
// when name has no letters or digits: "take-screenshot" -> "TakeScreenshot".
// Every generated type name carries a suffix or a prefix besides this, so it
// never is, nor shadows, a reserved word or a global type.
func typeName(name, fallback string) string {
	var b strings.Builder
	for _, w := range tsident.Words(name) {
		b.WriteString(tsident.UpperFirst(w))
	}
	s := b.String()
	if s == "" {
		s = fallback
	}
	return tsident.LegalStart(s)
}

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
	if tsident.Value(name, "") == name {
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
func ValueName(name, fallback string) string { return tsident.Value(name, fallback) }
