package main

import (
	"strings"
	"testing"

	"mcpx.dev/mcpx/scripts/runner"
)

// TestRecordFormats: one record in each format; a line that is not a
// record passes through every one; the writer rewrites whole lines only.
func TestRecordFormats(t *testing.T) {
	rec := []byte(`{"time":"2026-12-01T10:00:00.000Z","level":"warn","msg":"disk at 91%","disk":"/","pct":91}`)
	for format, want := range map[string]string{
		formatJSON:    string(rec),
		formatCompact: `W disk at 91% disk=/ pct=91`,
		formatBare:    `disk at 91%`,
	} {
		if got := formatRecord(format, rec); got != want {
			t.Errorf("%s: %q, want %q", format, got, want)
		}
	}
	if got := formatRecord(formatText, rec); !strings.HasSuffix(got, " warn disk at 91% disk=/ pct=91") {
		t.Errorf("text: %q", got)
	}
	for _, f := range recordFormats {
		if got := formatRecord(f, []byte("not a record")); got != "not a record" {
			t.Errorf("%s of a plain line: %q", f, got)
		}
	}
	// A template's attributes are in the message: text and compact print
	// only the rest (and never the template); json keeps everything.
	rec = []byte(`{"time":"2026-12-01T10:00:00.000Z","level":"info","msg":"status: ok at 1","template":"status: {status} at {level}","status":"ok","attr.level":1,"run":2}`)
	if got := formatRecord(formatCompact, rec); got != "I status: ok at 1 run=2" {
		t.Errorf("compact with a template: %q", got)
	}
	if got := formatRecord(formatText, rec); !strings.HasSuffix(got, " info status: ok at 1 run=2") {
		t.Errorf("text with a template: %q", got)
	}
	if got := formatRecord(formatJSON, rec); got != string(rec) {
		t.Errorf("json with a template: %q", got)
	}
	var b strings.Builder
	w := &recordWriter{w: &b, format: formatBare}
	w.Write([]byte(`{"level":"info","msg":"a"}` + "\n" + `{"level":"in`))
	w.Write([]byte(`fo","msg":"b"}` + "\nplain"))
	w.Close()
	if b.String() != "a\nb\nplain" {
		t.Errorf("the writer wrote %q", b.String())
	}
}

// TestRunFields: a run's json records get its fields after their own
// bytes, unchanged; a field the record has is its own; a line that is not
// a record, and the other formats, get nothing.
func TestRunFields(t *testing.T) {
	f := &runner.Fields{Session: "run-1", ParentSession: "agent", Cwd: "/src/app", Version: "1.2.3"}
	f.Started(4242)
	rec := `{"time":"T","level":"info","msg":"hi", "cwd":"mine"}`
	got := string(f.Enrich([]byte(rec + " ")))
	want := `{"time":"T","level":"info","msg":"hi", "cwd":"mine","session":"run-1","parentSession":"agent","pid":4242,"mcpxVersion":"1.2.3","elapsedMs":`
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "}") {
		t.Errorf("enriched:\n%s\nwant a prefix of\n%s", got, want)
	}
	for _, line := range []string{`not json`, `{"msg":"no level"}`, `[1,2]`, `{"level":1,"msg":"x"}`} {
		if got := string(f.Enrich([]byte(line))); got != line {
			t.Errorf("%s enriched to %s", line, got)
		}
	}
	var b strings.Builder
	w := &recordWriter{w: &b, format: formatBare, run: f}
	w.Write([]byte(`{"level":"info","msg":"a"}` + "\n"))
	w.Close()
	if b.String() != "a\n" {
		t.Errorf("bare with run fields: %q", b.String())
	}
}
