// Package suggest finds the name a misspelt one was probably meant to be,
// for the "did you mean" of an error's hint: a config key, a server, a
// tool.
package suggest

import "strings"

// Closest returns the candidate closest to s by edit distance (ignoring
// case), if it is close enough to be a likely typo: at most one edit for
// short names, up to three for long ones (a third of the candidate's
// length). "" when none is.
func Closest(s string, candidates []string) string {
	if len(s) > 64 {
		return ""
	}
	best, bestDist := "", -1
	for _, c := range candidates {
		d := Distance(strings.ToLower(s), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > max(1, min(3, len(best)/3)) {
		return ""
	}
	return best
}

// Distance is the edit distance between a and b in runes: insertions,
// deletions, substitutions and transpositions of two neighbours ("ehco"
// for "echo", the commonest typo) each count one (optimal string
// alignment).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
