package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"mcpx.dev/mcpx/internal/promptscan"
)

// Bounds of a tool-changed event's diff.
const (
	maxDiffLines = 2000 // lines of a side compared line by line; more: the whole of each side
	maxDiffBytes = 16 << 10
)

// toolDiff is how a tool's pinned part changed from old to new (nil =
// none: added or removed), as lines: "-" old, "+" new, " " both, with
// three lines of context; invisible characters written out
// (promptscan.Visible). "" if they read the same.
func toolDiff(old, new []byte) string {
	a, b := defLines(old), defLines(new)
	var ops []string
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		ops = append(prefixed("-", a), prefixed("+", b)...)
	} else {
		ops = lineDiff(a, b)
	}
	out := withContext(ops, 3)
	if len(out) > maxDiffBytes {
		out = out[:maxDiffBytes] + "\n… (diff cut)"
	}
	return out
}

// defLines renders a pinned part for reading: the description as its
// lines, the other members as indented JSON, each under its name.
func defLines(def []byte) []string {
	if def == nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(def, &m) != nil {
		return []string{promptscan.Visible(string(def))}
	}
	var out []string
	for _, k := range pinnedMembers {
		v, ok := m[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			out = append(out, k+":")
			for _, l := range strings.Split(s, "\n") {
				out = append(out, "  "+promptscan.Visible(l))
			}
			continue
		}
		var buf bytes.Buffer
		json.Indent(&buf, v, "", "  ") //nolint:errcheck // a member of valid JSON
		out = append(out, k+":")
		for _, l := range strings.Split(buf.String(), "\n") {
			out = append(out, "  "+promptscan.Visible(l))
		}
	}
	return out
}

func prefixed(p string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = p + l
	}
	return out
}

// lineDiff is a longest-common-subsequence diff of a and b, each line
// prefixed "-", "+" or " ".
func lineDiff(a, b []string) []string {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, " "+a[i])
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, "-"+a[i])
			i++
		default:
			out = append(out, "+"+b[j])
			j++
		}
	}
	out = append(out, prefixed("-", a[i:])...)
	return append(out, prefixed("+", b[j:])...)
}

// withContext keeps the changed lines and ctx lines around each; "" if
// nothing changed.
func withContext(ops []string, ctx int) string {
	keep := make([]bool, len(ops))
	changed := false
	for i, op := range ops {
		if op[0] == ' ' {
			continue
		}
		changed = true
		for k := max(0, i-ctx); k <= min(len(ops)-1, i+ctx); k++ {
			keep[k] = true
		}
	}
	if !changed {
		return ""
	}
	var b strings.Builder
	gap := false
	for i, op := range ops {
		if !keep[i] {
			gap = true
			continue
		}
		if gap && b.Len() > 0 {
			b.WriteString("…\n")
		}
		gap = false
		fmt.Fprintln(&b, op)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
