package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"mcpx.dev/mcpx/scripts/runner"
)

// Record formats: how `log`, `run`, `exec` (a script's log records on
// stderr) and `events` print what they print, with --format.
const (
	formatText    = "text"    // 15:04:05.000 WARN msg k=v …, for people
	formatJSON    = "json"    // each record as it was written, one JSON object per line
	formatCompact = "compact" // W msg k=v …: no time, the level's initial
	formatBare    = "bare"    // the message alone
)

var recordFormats = []string{formatText, formatJSON, formatCompact, formatBare}

// checkFormat is a usage problem for a --format value that is not one;
// "" when it is.
func checkFormat(f string) string {
	if slices.Contains(recordFormats, f) {
		return ""
	}
	return fmt.Sprintf("--format %q: want text, json, compact or bare", f)
}

// formatRecord renders one JSON log record in format; a line that is not
// a record ({"level", "msg", …}) is returned as it is.
func formatRecord(format string, raw []byte) string {
	if format == formatJSON {
		return string(raw)
	}
	var rec map[string]any
	if json.Unmarshal(raw, &rec) != nil {
		return string(raw)
	}
	level, lok := rec["level"].(string)
	msg, mok := rec["msg"].(string)
	if !lok || !mok {
		return string(raw)
	}
	switch format {
	case formatBare:
		return msg
	case formatCompact:
		dropConsumed(rec)
		delete(rec, "time")
		delete(rec, "level")
		delete(rec, "msg")
		initial := strings.ToUpper(level)
		if initial != "" {
			initial = initial[:1]
		}
		return initial + " " + msg + attrText(rec)
	}
	return logLine(raw)
}

// templateName is a {name} of a log record's template (the script
// client's log, clientgen/runtime/2-log.ts, fills them in).
var templateName = regexp.MustCompile(`\{([A-Za-z_$][\w$.-]*)\}`)

// recordFields are a record's own members: an attribute named like one
// is written as "attr.<name>" (2-log.ts).
var recordFields = []string{"time", "level", "msg", "template", "source"}

// dropConsumed removes from a record read for people its template and the
// attributes the template put into its message: the message says them
// already ("status: ok", not "status: ok status=ok template=…"). The
// json format keeps every member.
func dropConsumed(rec map[string]any) {
	tmpl, ok := rec["template"].(string)
	if !ok {
		return
	}
	delete(rec, "template")
	for _, m := range templateName.FindAllStringSubmatch(tmpl, -1) {
		name := m[1]
		if slices.Contains(recordFields, name) {
			name = "attr." + name
		}
		delete(rec, name)
	}
}

// attrText is " k=v" for each of rec's members, sorted, quoted as slog's
// text handler quotes.
func attrText(rec map[string]any) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		s, ok := rec[k].(string)
		if !ok {
			js, _ := json.Marshal(rec[k])
			s = string(js)
		}
		if strings.ContainsAny(s, " \t\n\"=") || s == "" {
			s = fmt.Sprintf("%q", s)
		}
		fmt.Fprintf(&b, " %s=%s", k, s)
	}
	return b.String()
}

// recordWriter rewrites the JSON records of a script's stderr, line by
// line, in its format; other lines pass through as they are. Close
// writes what is left of a last line without a newline.
type recordWriter struct {
	w      io.Writer
	format string
	run    *runner.Fields // json records are given the run's fields; nil = none
	mu     sync.Mutex
	buf    []byte
}

func (r *recordWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			break
		}
		line := r.buf[:i]
		if r.run != nil && r.format == formatJSON {
			line = r.run.Enrich(line)
		}
		if _, err := io.WriteString(r.w, formatRecord(r.format, line)+"\n"); err != nil {
			return len(p), err
		}
		r.buf = r.buf[i+1:]
	}
	return len(p), nil
}

func (r *recordWriter) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) == 0 {
		return nil
	}
	line := r.buf
	if r.run != nil && r.format == formatJSON {
		line = r.run.Enrich(line)
	}
	_, err := io.WriteString(r.w, formatRecord(r.format, line))
	r.buf = nil
	return err
}
