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
// [Root], [Cwd], [Instance], [Index], [Key] and [TmpDir], and alloc.NAME for
// each NAME in a server's allocate block ([Ref.Alloc]); see
// docs/children.md for what they stand for.
package placeholder

import (
	"iter"
	"strings"
)

// The placeholders the pool substitutes at spawn time. Any other
// ${mcpx.NAME} is a config error; other ${...} are left alone.
const (
	Root     = "${mcpx.root}"     // the instance root
	Cwd      = "${mcpx.cwd}"      // the canonical cwd of the caller that caused the spawn
	Instance = "${mcpx.instance}" // the instance id, as status shows it
	Index    = "${mcpx.index}"    // the lowest index free among the server's live instances, from 0
	Key      = "${mcpx.key}"      // the scope key, made safe for file names and URLs
	TmpDir   = "${mcpx.tmpdir}"   // a private directory made for the instance, removed with it
)

// AllocPrefix starts a reference to a per-server allocation:
// ${mcpx.alloc.port} is the port allocated as "port".
const AllocPrefix = "${mcpx.alloc."

// Names are the known placeholder names, as [Ref.Name] holds them.
var Names = []string{"root", "cwd", "instance", "index", "key", "tmpdir"}

// Known lists the known placeholders, for error hints.
const Known = "known: " + Root + ", " + Cwd + ", " + Instance + ", " + Index + ", " + Key + ", " + TmpDir +
	", " + AllocPrefix + "NAME} for a NAME in the server's allocate block"

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

// Known reports whether r is one of the fixed placeholders the pool
// substitutes; an allocation is not one of them (see [Ref.Alloc]).
func (r Ref) Known() bool {
	switch r.Text {
	case Root, Cwd, Instance, Index, Key, TmpDir:
		return true
	}
	return false
}

// Alloc reports whether r names an allocation, ${mcpx.alloc.NAME}, and
// which. Whether the server declares NAME is for the caller to check.
func (r Ref) Alloc() (name string, ok bool) {
	name, ok = strings.CutPrefix(r.Name, "alloc.")
	if !ok || !r.Closed || name == "" {
		return "", false
	}
	return name, true
}

// PerInstance reports whether s holds a placeholder whose value is made
// for an instance at its first start: ${mcpx.tmpdir} or an allocation.
func PerInstance(s string) bool {
	for r := range Refs(s) {
		if _, ok := r.Alloc(); ok || r.Text == TmpDir {
			return true
		}
	}
	return false
}

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
