// Package placeholder is the grammar of the ${mcpx.*} placeholders in a
// server's config strings, in one place: the config checks and the pool's
// spawn-time substitution both read strings through [Refs].
//
//	for r := range placeholder.Refs("--root=${mcpx.root} ${HOME}") {
//		// r.Text == "${mcpx.root}", r.Name == "root", r.Closed
//	}
//
// A reference starts at "${mcpx" followed by ".", "}" or the end of the
// string, and runs to the next "}". Anything else, ${HOME} or ${mcpxHome}
// say, is not a reference and passes through untouched. The known names are
// [Root] and [Cwd]; see docs/architecture.md for what they stand for.
package placeholder

import (
	"iter"
	"strings"
)

// The placeholders the pool substitutes at spawn time. Any other
// ${mcpx.NAME} is a config error; other ${...} are left alone.
const (
	Root = "${mcpx.root}" // the instance root
	Cwd  = "${mcpx.cwd}"  // the canonical cwd of the caller that caused the spawn
)

// Names are the known placeholder names, as [Ref.Name] holds them.
var Names = []string{"root", "cwd"}

// Known lists the known placeholders, for error hints.
const Known = "known: " + Root + ", " + Cwd

// open starts every reference.
const open = "${mcpx"

// Ref is one ${mcpx...} reference in a string.
type Ref struct {
	Start int    // s[Start:Start+len(Text)] is the reference
	Text  string // "${mcpx.root}"; for an unclosed reference, the rest of the string
	// Name is what lies between "${mcpx." and "}": "root" for ${mcpx.root},
	// "" for ${mcpx} and ${mcpx.}, and "" for an unclosed reference.
	Name   string
	Closed bool // false: no "}" follows; the reference runs to the end of s
}

// End is the index in s just past r.
func (r Ref) End() int { return r.Start + len(r.Text) }

// Known reports whether r is one of the placeholders the pool substitutes.
func (r Ref) Known() bool { return r.Text == Root || r.Text == Cwd }

// Refs yields the ${mcpx...} references in s, in order. An unclosed
// reference runs to the end of s, so it is the last one.
func Refs(s string) iter.Seq[Ref] {
	return func(yield func(Ref) bool) {
		for i := 0; ; {
			j := strings.Index(s[i:], open)
			if j < 0 {
				return
			}
			start := i + j
			after := s[start+len(open):]
			if after != "" && after[0] != '.' && after[0] != '}' {
				i = start + len(open) // ${mcpxHome}: not ours
				continue
			}
			end := strings.IndexByte(after, '}')
			if end < 0 {
				yield(Ref{Start: start, Text: s[start:]})
				return
			}
			text := s[start : start+len(open)+end+1]
			name := strings.TrimPrefix(text[len(open):len(text)-1], ".")
			if !yield(Ref{Start: start, Text: text, Name: name, Closed: true}) {
				return
			}
			i = start + len(text)
		}
	}
}
