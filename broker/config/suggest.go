package config

import (
	"fmt"
	"strings"
)

// hintFor suggests the closest known name to got, or lists them all.
func hintFor(got string, known []string, what string) string {
	if s := suggest(got, known); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return fmt.Sprintf("known %s: %s", what, strings.Join(known, ", "))
}

// clientHint is hintFor for a key of mcpx's own (known), which also
// suggests the closest key of a client format (client) that mcpx accepts,
// but lists only its own.
func clientHint(got string, known, client []string, what string) string {
	if s := suggest(got, client); s != "" && suggest(got, known) == "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return hintFor(got, known, what)
}

// suggest returns the candidate closest to s by edit distance, if it is
// close enough to be a likely typo.
func suggest(s string, candidates []string) string {
	if len(s) > 64 {
		return ""
	}
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > max(1, min(3, len(best)/3)) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
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
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
