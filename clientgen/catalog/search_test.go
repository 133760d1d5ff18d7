package catalog_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"mcpx.dev/mcpx/clientgen/catalog"
)

// searchTools is a small broker's worth of tools: the real filesystem
// server's, and a browser server with tags.
func searchTools(t *testing.T) []catalog.Tool {
	tools := slices.Clone(corpus(t)["filesystem"])
	for _, tt := range []catalog.Tool{
		{Name: "take_screenshot", Description: "Capture the visible page as a PNG", Tags: []string{"read-only", "browser"}},
		{Name: "navigate", Description: "Open a URL in the current tab", Tags: []string{"browser"}},
		{Name: "screen_reader", Description: "Read the page aloud", Tags: []string{"Browser"}},
		{Name: "click", Description: "Click an element of the page"},
	} {
		tt.Server = "playwright"
		tools = append(tools, tt)
	}
	return tools
}

func hitNames(hits []catalog.Hit) []string {
	var names []string
	for _, h := range hits {
		names = append(names, h.Server+"."+h.Name)
	}
	return names
}

func TestSearch(t *testing.T) {
	tools := searchTools(t)
	for _, tc := range []struct {
		terms []string
		tags  []string
		match catalog.Match
		want  []string // the hits, in order; a prefix if more may follow
		more  bool
	}{
		// Exact beats prefix beats contains; the rest by server then name.
		{terms: []string{"read_file"}, match: catalog.MatchAll,
			want: []string{"filesystem.read_file"}},
		{terms: []string{"read"}, match: catalog.MatchAll,
			want: []string{"filesystem.read_file", "filesystem.read_media_file", "filesystem.read_multiple_files", "filesystem.read_text_file", "playwright.screen_reader"}, more: true},
		// A stemmed word of the name: "directories" is directory.
		{terms: []string{"directories"}, match: catalog.MatchAll,
			want: []string{"filesystem.create_directory"}, more: true},
		// All terms are required.
		{terms: []string{"list", "sizes"}, match: catalog.MatchAll,
			want: []string{"filesystem.list_directory_with_sizes"}},
		// No tool has both: any term will do.
		{terms: []string{"navigate", "gzip"}, match: catalog.MatchAny,
			want: []string{"playwright.navigate"}},
		// Nothing matches: typo tolerance, against name words and servers.
		{terms: []string{"screenshto"}, match: catalog.MatchTypo,
			want: []string{"playwright.take_screenshot"}},
		{terms: []string{"filesytem"}, match: catalog.MatchTypo,
			want: []string{"filesystem.create_directory"}, more: true},
		{terms: []string{"zzzzzzzz"}, match: catalog.MatchTypo},
		// A path names one tool.
		{terms: []string{"playwright.click"}, match: catalog.MatchAll,
			want: []string{"playwright.click"}},
		// Tags filter exactly: "Browser" is not "browser".
		{tags: []string{"browser"}, match: catalog.MatchAll,
			want: []string{"playwright.navigate", "playwright.take_screenshot"}},
		{tags: []string{"browser", "read-only"}, match: catalog.MatchAll,
			want: []string{"playwright.take_screenshot"}},
		{terms: []string{"screen"}, tags: []string{"browser"}, match: catalog.MatchAll,
			want: []string{"playwright.take_screenshot"}},
		{tags: []string{"browse"}, match: catalog.MatchAll},
	} {
		t.Run(strings.Join(append(tc.terms, tc.tags...), "+"), func(t *testing.T) {
			hits, match := catalog.Search(tools, tc.terms, catalog.SearchOptions{Tags: tc.tags})
			got := hitNames(hits)
			if match != tc.match {
				t.Errorf("match = %s, want %s (hits %v)", match, tc.match, got)
			}
			if tc.more && len(got) > len(tc.want) {
				got = got[:len(tc.want)]
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("hits = %v, want %v", got, tc.want)
			}
			for i := 1; i < len(hits); i++ {
				if hits[i-1].Score < hits[i].Score {
					t.Errorf("hit %d scores %d after %d", i, hits[i].Score, hits[i-1].Score)
				}
			}
			for _, h := range hits {
				if tools[h.Tool].Server != h.Server || tools[h.Tool].Name != h.Name {
					t.Errorf("hit %s.%s points at tool %d, %s.%s", h.Server, h.Name, h.Tool, tools[h.Tool].Server, tools[h.Tool].Name)
				}
			}
		})
	}
}

// TestSearchExplain checks that each term's contribution is explained and
// adds up to the score.
func TestSearchExplain(t *testing.T) {
	tools := searchTools(t)
	hits, _ := catalog.Search(tools, []string{"Browser", "Playwright", "page", "take"}, catalog.SearchOptions{})
	if len(hits) == 0 || hits[0].Name != "take_screenshot" {
		t.Fatalf("hits = %v, want take_screenshot first", hitNames(hits))
	}
	explain := func(h catalog.Hit) string {
		var b strings.Builder
		for _, ts := range h.Terms {
			fmt.Fprintf(&b, "%s=%d:", ts.Term, ts.Points)
			for _, p := range ts.Parts {
				fmt.Fprintf(&b, " %s/%s/%d", p.Field, p.Why, p.Points)
			}
			b.WriteString("; ")
		}
		return b.String()
	}
	want := "browser=50: tag/exact/50; playwright=20: server/word/20; page=10: description/word/10; take=60: name/prefix/60; "
	if got := explain(hits[0]); got != want {
		t.Errorf("explain:\n got %s\nwant %s", got, want)
	}
	for _, h := range hits {
		sum := 0
		for _, ts := range h.Terms {
			part := 0
			for _, p := range ts.Parts {
				part += p.Points
			}
			if part != ts.Points {
				t.Errorf("%s, term %q: parts add to %d, points %d", h.Name, ts.Term, part, ts.Points)
			}
			sum += ts.Points
		}
		if sum != h.Score {
			t.Errorf("%s: terms add to %d, score %d", h.Name, sum, h.Score)
		}
	}

	typo, match := catalog.Search(tools, []string{"screenshto"}, catalog.SearchOptions{})
	if match != catalog.MatchTypo || len(typo) != 1 {
		t.Fatalf("screenshto: %s %v", match, hitNames(typo))
	}
	if got, want := explain(typo[0]), "screenshto=13: name/typo (2 edits)/13; "; got != want {
		t.Errorf("typo explain = %q, want %q", got, want)
	}
}

// TestSearchDeterministic checks that the order of the tools given does not
// change the hits.
func TestSearchDeterministic(t *testing.T) {
	tools := searchTools(t)
	first, _ := catalog.Search(tools, []string{"file"}, catalog.SearchOptions{})
	slices.Reverse(tools)
	again, _ := catalog.Search(tools, []string{"file"}, catalog.SearchOptions{})
	if a, b := hitNames(first), hitNames(again); !slices.Equal(a, b) || len(a) < 5 {
		t.Errorf("hits depend on the tools' order:\n%v\n%v", a, b)
	}
}
