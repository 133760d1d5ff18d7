package clientgen

import (
	"fmt"
	"strconv"
	"strings"
)

// Identifiers are made from MCP names (tool and server names are free-form
// strings) in three steps: split into ASCII words, join, then make the result
// legal (a leading digit gets a "_" prefix, a reserved word a "_" suffix).
// A non-ASCII letter becomes its own word "U<hex>", so that the generated
// file is ASCII and no TypeScript version's Unicode tables matter. Names that
// collide after cleaning are told apart by a namer, in the sorted order of
// the original names, so suffixes are stable from run to run.

// words splits s into runs of ASCII letters and digits; every non-ASCII rune
// is a word of its own.
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

func upperFirst(w string) string {
	if w == "" || w[0] < 'a' || w[0] > 'z' {
		return w
	}
	return string(w[0]-'a'+'A') + w[1:]
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
	if s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	return s
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
	if s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
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
	for i := 1; ; i++ {
		s := base
		if i > 1 {
			s = base + "_" + strconv.Itoa(i)
		}
		if !n.used[s] {
			n.used[s] = true
			return s
		}
	}
}

// takeTool returns the first of base, base_2, … for which both
// <base>Input and <base>Output are free, and takes both.
func (n *namer) takeTool(base string) string {
	for i := 1; ; i++ {
		s := base
		if i > 1 {
			s = base + "_" + strconv.Itoa(i)
		}
		if !n.used[s+"Input"] && !n.used[s+"Output"] {
			n.used[s+"Input"], n.used[s+"Output"] = true, true
			return s
		}
	}
}
