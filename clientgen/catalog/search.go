package catalog

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
)

// Points a search term earns for each way it matches a tool (see [Search]).
const (
	PointsExact       = 100 // the term is the tool's name
	PointsPrefix      = 60  // the tool's name starts with the term
	PointsTag         = 50  // the term is one of the tool's tags
	PointsContains    = 40  // the tool's name contains the term
	PointsWord        = 40  // the term is a word of the name, split or stemmed
	PointsPath        = 30  // the term is part of the tool's path server.tool
	PointsServer      = 20  // the term is, or is a word of, the server's name
	PointsDescription = 10  // the term is a word of the description, or stemmed
)

// SearchOptions narrow a [Search]. The zero value filters nothing.
type SearchOptions struct {
	// Tags, if any, keeps only the tools that carry every one of them, by
	// exact (case-sensitive) comparison.
	Tags []string
}

// Match says how a search matched: with every term, with some of them, or
// only by typo tolerance.
type Match string

const (
	MatchAll  Match = "all"  // every term matched each hit
	MatchAny  Match = "any"  // no tool matched every term; each hit matched some
	MatchTypo Match = "typo" // nothing matched; hits are within 2 edits of a term
)

// Hit is one tool found by [Search].
type Hit struct {
	Server, Name string
	// Tool is the index of the tool in the slice given to Search.
	Tool  int
	Score int
	// Terms says what each term contributed, in the order of the terms.
	Terms []TermScore
}

// TermScore is what one search term contributed to a hit.
type TermScore struct {
	Term   string
	Points int
	// Parts are the reasons, each with its points; empty if the term did
	// not match this tool.
	Parts []ScorePart
}

// ScorePart is one reason a term matched: the field it matched (name, tag,
// path, server, description) and how.
type ScorePart struct {
	Field  string
	Why    string
	Points int
}

// Search finds tools by terms, scored as the Points constants say. A term
// earns the best of its name matches (exact, prefix, contains, word), plus
// the tag, path, server and description points; comparisons ignore case,
// except for tags. Hits must match every term; if no tool does, hits are the
// tools that match any term; if still none, a term matches a tool whose
// name, a word of its name, or its server's name is within two edits of it
// (within one for terms shorter than five letters), scoring less the more
// edits it takes. The result says which of the three it used, and is ordered
// by score, then server, then name. No terms match every tool that has the
// tags, with score 0.
func Search(tools []Tool, terms []string, opts SearchOptions) ([]Hit, Match) {
	terms = cleanTerms(terms)
	var candidates []int
	for i, t := range tools {
		if hasTags(t.Tags, opts.Tags) {
			candidates = append(candidates, i)
		}
	}
	score := func(keep func(TermScore) bool, scoreTerm func(Tool, string) TermScore, all bool) []Hit {
		var hits []Hit
		for _, i := range candidates {
			h := Hit{Server: tools[i].Server, Name: tools[i].Name, Tool: i}
			n := 0
			for _, term := range terms {
				ts := scoreTerm(tools[i], term)
				if keep(ts) {
					n++
				}
				h.Score += ts.Points
				h.Terms = append(h.Terms, ts)
			}
			if (all && n == len(terms)) || (!all && n > 0) {
				hits = append(hits, h)
			}
		}
		sortHits(hits)
		return hits
	}
	matched := func(ts TermScore) bool { return ts.Points > 0 }
	if hits := score(matched, scoreTerm, true); len(hits) > 0 || len(terms) == 0 {
		return hits, MatchAll
	}
	if hits := score(matched, scoreTerm, false); len(hits) > 0 {
		return hits, MatchAny
	}
	return score(matched, typoTerm, false), MatchTypo
}

// cleanTerms lowercases terms and drops empty ones.
func cleanTerms(terms []string) []string {
	var out []string
	for _, t := range terms {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func hasTags(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func sortHits(hits []Hit) {
	slices.SortStableFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Server, b.Server), cmp.Compare(a.Name, b.Name))
	})
}

// scoreTerm scores one lowercased term against a tool.
func scoreTerm(t Tool, term string) TermScore {
	ts := TermScore{Term: term}
	add := func(field, why string, points int) {
		ts.Parts = append(ts.Parts, ScorePart{Field: field, Why: why, Points: points})
		ts.Points += points
	}
	name := strings.ToLower(t.Name)
	switch {
	case name == term:
		add("name", "exact", PointsExact)
	case strings.HasPrefix(name, term):
		add("name", "prefix", PointsPrefix)
	case strings.Contains(name, term):
		add("name", "contains", PointsContains)
	case hasWord(nameWords(t.Name), term):
		add("name", "word", PointsWord)
	}
	if slices.ContainsFunc(t.Tags, func(tag string) bool { return strings.ToLower(tag) == term }) {
		add("tag", "exact", PointsTag)
	}
	if strings.ContainsAny(term, "./") && t.Server != "" {
		path := strings.ToLower(t.Server + "." + t.Name)
		if strings.Contains(path, term) || strings.Contains(strings.ReplaceAll(path, ".", "/"), term) {
			add("path", "contains", PointsPath)
		}
	}
	if server := strings.ToLower(t.Server); server != "" && (server == term || hasWord(nameWords(t.Server), term)) {
		add("server", "word", PointsServer)
	}
	if hasWord(nameWords(t.Description), term) {
		add("description", "word", PointsDescription)
	}
	return ts
}

// typoTerm scores a term by its edit distance to the tool's name, the words
// of its name, and its server's name.
func typoTerm(t Tool, term string) TermScore {
	ts := TermScore{Term: term}
	limit := 2
	if len(term) < 5 {
		limit = 1
	}
	best := limit + 1
	for _, w := range append([]string{strings.ToLower(t.Name)}, nameWords(t.Name)...) {
		best = min(best, editDistance(term, w, limit))
	}
	if best <= limit {
		p := PointsContains / (best + 1) // 20 for one edit, 13 for two
		ts.Parts = append(ts.Parts, ScorePart{Field: "name", Why: typoWhy(best), Points: p})
		ts.Points += p
	}
	if t.Server == "" {
		return ts
	}
	best = limit + 1
	for _, w := range append([]string{strings.ToLower(t.Server)}, nameWords(t.Server)...) {
		best = min(best, editDistance(term, w, limit))
	}
	if best <= limit {
		p := PointsServer / (best + 1)
		ts.Parts = append(ts.Parts, ScorePart{Field: "server", Why: typoWhy(best), Points: p})
		ts.Points += p
	}
	return ts
}

func typoWhy(edits int) string {
	if edits == 1 {
		return "typo (1 edit)"
	}
	return "typo (2 edits)"
}

// nameWords splits a name or text into lowercase words: at every character
// that is not a letter or digit, and where a lower-case letter or digit is
// followed by an upper-case one (takeScreenshot -> take, screenshot).
func nameWords(s string) []string {
	var ws []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			ws = append(ws, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range s {
		switch {
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			flush()
			cur = append(cur, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return ws
}

// hasWord reports whether term is one of words, as it is or stemmed.
func hasWord(words []string, term string) bool {
	st := stem(term)
	for _, w := range words {
		if w == term || stem(w) == st {
			return true
		}
	}
	return false
}

// stem strips one common English suffix (files -> file, listing -> list,
// directories -> directory), keeping at least three letters.
func stem(w string) string {
	for _, s := range []struct{ suffix, repl string }{
		{"ies", "y"}, {"ing", ""}, {"ed", ""}, {"es", ""}, {"s", ""},
	} {
		if base, ok := strings.CutSuffix(w, s.suffix); ok && len(base) >= 3 && !strings.HasSuffix(w, "ss") {
			return base + s.repl
		}
	}
	return w
}

// editDistance is the Levenshtein distance between a and b (by byte), or
// limit+1 if it is more than limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit+1)
}
