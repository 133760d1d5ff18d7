// Package tsident makes TypeScript identifiers from MCP names (server and
// tool names are free-form strings), one way for every place that must
// agree on them: the TypeScript client's namespaces and functions
// (clientgen), and the config's check that two servers do not clean to
// one namespace (config).
//
//	tsident.Value("server-everything", "server") // "serverEverything"
//
// A leaf: it imports only the standard library.
package tsident

import (
	"fmt"
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
// "U<hex>", and ASCII punctuation separates words. Names that clean to the
// same identifier are told apart by clientgen.

// Words splits s into runs of identifier characters; every non-ASCII rune
// that cannot be in an identifier is a word of its own.
func Words(s string) []string {
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

// IsIDStart reports whether r may start an ECMAScript identifier (Unicode
// ID_Start; "$" and "_" are the callers').
func IsIDStart(r rune) bool {
	return unicode.In(r, unicode.L, unicode.Nl, unicode.Other_ID_Start) &&
		!unicode.In(r, unicode.Pattern_Syntax, unicode.Pattern_White_Space)
}

// isIDContinue reports whether r may continue an identifier (ID_Continue).
func isIDContinue(r rune) bool {
	return IsIDStart(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc, unicode.Other_ID_Continue) &&
		!unicode.In(r, unicode.Pattern_Syntax, unicode.Pattern_White_Space)
}

// LegalStart prefixes s with "_" unless it starts an identifier.
func LegalStart(s string) string {
	r, _ := utf8.DecodeRuneInString(s)
	if r == '_' || r == '$' || IsIDStart(r) {
		return s
	}
	return "_" + s
}

// UpperFirst upper-cases w's first letter, if its upper case starts an
// identifier.
func UpperFirst(w string) string {
	r, n := utf8.DecodeRuneInString(w)
	if u := unicode.ToUpper(r); u != r && IsIDStart(u) {
		return string(u) + w[n:]
	}
	return w
}

// Value returns the camelCase form of name for namespaces and values:
// "server-everything" -> "serverEverything", "delete" -> "delete_",
// "3d" -> "_3d"; fallback when name has no letters or digits.
func Value(name, fallback string) string {
	var b strings.Builder
	for i, w := range Words(name) {
		if i > 0 {
			w = UpperFirst(w)
		}
		b.WriteString(w)
	}
	s := b.String()
	if s == "" {
		s = fallback
	}
	s = LegalStart(s)
	if Reserved[s] {
		s += "_"
	}
	return s
}

// Reserved holds the words a TypeScript namespace or value may not be named,
// or had better not be: ECMAScript reserved words, strict-mode and module
// reserved words, and TypeScript's type and contextual keywords.
var Reserved = func() map[string]bool {
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
