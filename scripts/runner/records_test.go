package runner_test

import (
	"regexp"
	"strings"
	"testing"

	"mcpx.dev/mcpx/scripts/runner"
)

// TestFieldsEnrich: a record gets the run's fields after its own bytes, in
// their order, server and tool after the sessions; a field the record has
// is its own, an empty one is left out (mcpxVersion is always said); a
// line that is not a record is left as it is.
func TestFieldsEnrich(t *testing.T) {
	f := &runner.Fields{Session: "mcp-1", ParentSession: "agent", Server: "mcpx", Tool: "run", Cwd: "/src/app"}
	f.Started(4242)
	got := string(f.Enrich([]byte(`{"level":"info","msg":"hi","tool":"mine"} `)))
	want := `^\{"level":"info","msg":"hi","tool":"mine","session":"mcp-1","parentSession":"agent","server":"mcpx","pid":4242,"cwd":"/src/app","mcpxVersion":"","elapsedMs":\d+\}$`
	if !regexp.MustCompile(want).MatchString(got) {
		t.Errorf("enriched:\n%s\nwant\n%s", got, want)
	}
	unstarted := &runner.Fields{Version: "1.2.3"}
	if got := string(unstarted.Enrich([]byte(`{"level":"info","msg":"hi"}`))); got != `{"level":"info","msg":"hi","mcpxVersion":"1.2.3"}` {
		t.Errorf("a run's fields before it started: %s", got)
	}
	for _, line := range []string{`not json`, `{"msg":"no level"}`, `[1,2]`, `{"level":1,"msg":"x"}`, ``} {
		if got := string(f.Enrich([]byte(line))); got != line {
			t.Errorf("%q enriched to %q", line, got)
		}
	}
}

// TestRecordLines: the writer enriches each whole record as its newline
// comes, however the writes split it, and a last line at flush; other
// lines, and a line too long to hold, pass as they are.
func TestRecordLines(t *testing.T) {
	f := &runner.Fields{Session: "s", Version: "v"}
	var b strings.Builder
	w, flush := runner.NewRecordLines(&b, f)
	long := `{"level":"info","msg":"` + strings.Repeat("x", runner.MaxRecordLine) + `"}`
	for _, p := range []string{`{"level":"info","msg":"a"}` + "\nplain\n" + `{"level":"in`, `fo","msg":"b"}` + "\n", long[:10], long[10:] + "\n", `{"level":"warn","msg":"c"}`} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	want := `{"level":"info","msg":"a","session":"s","mcpxVersion":"v"}` + "\nplain\n" + `{"level":"info","msg":"b","session":"s","mcpxVersion":"v"}` + "\n" +
		long + "\n" + `{"level":"warn","msg":"c","session":"s","mcpxVersion":"v"}`
	if got := b.String(); got != want {
		if len(got) > 300 {
			got = got[:150] + " … " + got[len(got)-150:]
		}
		t.Errorf("the writer wrote\n%s", got)
	}
}
