package calllog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/observe/calllog"
)

// clock is a settable Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// warnings counts the log's records at Warn and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) logger() *slog.Logger                         { return slog.New(w) }
func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return true }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.mu.Lock()
		w.msgs = append(w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }
func (w *warnings) count() int                         { w.mu.Lock(); defer w.mu.Unlock(); return len(w.msgs) }

func syncLog(t *testing.T, l *calllog.Log) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSummarize: a known sequence of calls gives exactly its figures.
func TestSummarize(t *testing.T) {
	dir := t.TempDir()
	l := calllog.Open(calllog.Options{Dir: dir})
	t.Cleanup(func() { l.Close() })
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// 100 calls of demo.echo taking 1..100ms: every 10th isError, every
	// 25th a timeout; and 4 calls of fs.read by another caller, all ok.
	for i := 1; i <= 100; i++ {
		r := calllog.Record{Time: t0.Add(time.Duration(i) * time.Second), Caller: "local:1000", Via: "unix",
			Server: "demo", Tool: "echo", Duration: time.Duration(i) * time.Millisecond, Outcome: calllog.OK, BytesIn: 10, BytesOut: 20}
		switch {
		case i%25 == 0:
			r.Outcome, r.Error, r.BytesOut = calllog.Failed, "timeout", 0
		case i%10 == 0:
			r.Outcome = calllog.IsError
		}
		l.Add(r)
	}
	for i := 1; i <= 4; i++ {
		l.Add(calllog.Record{Time: t0.Add(time.Duration(200+i) * time.Second), Caller: "alice@example.com", Via: "tailnet",
			Server: "fs", Tool: "read", Duration: time.Duration(i) * time.Second, Outcome: calllog.OK, BytesIn: 1, BytesOut: 2})
	}
	syncLog(t, l)
	if c := l.Counters(); c.Written != 104 || c.Dropped != 0 || c.Failed != 0 {
		t.Fatalf("counters = %+v, want 104 written", c)
	}

	sum, err := calllog.Summarize(dir, calllog.Query{By: calllog.ByTool})
	if err != nil {
		t.Fatal(err)
	}
	echo := calllog.Row{Key: "demo.echo", Count: 100, Failures: 12, IsError: 8, Errors: 4, FailureRate: 0.12,
		P50: 50 * time.Millisecond, P95: 95 * time.Millisecond, P99: 99 * time.Millisecond, BytesIn: 1000, BytesOut: 1920}
	read := calllog.Row{Key: "fs.read", Count: 4, P50: 2 * time.Second, P95: 4 * time.Second, P99: 4 * time.Second, BytesIn: 4, BytesOut: 8}
	if len(sum.Rows) != 2 || !reflect.DeepEqual(sum.Rows[0], echo) || !reflect.DeepEqual(sum.Rows[1], read) {
		t.Errorf("rows =\n%+v\nwant\n%+v", sum.Rows, []calllog.Row{echo, read})
	}
	// Of 104 calls, the 103rd fastest is the p99: the third of the reads.
	if sum.Total.Count != 104 || sum.Total.Failures != 12 || sum.Total.P99 != 3*time.Second || sum.Skipped != 0 {
		t.Errorf("total = %+v, skipped %d", sum.Total, sum.Skipped)
	}

	// --since keeps the calls that began at or after it; --by caller.
	sum, err = calllog.Summarize(dir, calllog.Query{Since: t0.Add(91 * time.Second), By: calllog.ByCaller})
	if err != nil {
		t.Fatal(err)
	}
	// Calls 91..100 (100 is a timeout, 100 is not also counted as isError) and the 4 reads.
	local := calllog.Row{Key: "local:1000", Count: 10, Failures: 1, Errors: 1, FailureRate: 0.1,
		P50: 95 * time.Millisecond, P95: 100 * time.Millisecond, P99: 100 * time.Millisecond, BytesIn: 100, BytesOut: 180}
	if len(sum.Rows) != 2 || !reflect.DeepEqual(sum.Rows[0], local) || sum.Rows[1].Key != "alice@example.com" || sum.Rows[1].Count != 4 {
		t.Errorf("rows since =\n%+v\nwant first\n%+v", sum.Rows, local)
	}

	// A step splits each row into buckets from since: the echoes at 1..59s
	// and 60..100s, the reads at 201..204s, every bucket up to a row's last
	// call's, empty ones included.
	sum, err = calllog.Summarize(dir, calllog.Query{Since: t0, By: calllog.ByServer, Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	wantDemo := []calllog.Bucket{
		{Start: t0, Count: 59, Failures: 6, P50: 30 * time.Millisecond, P95: 57 * time.Millisecond},
		{Start: t0.Add(time.Minute), Count: 41, Failures: 6, P50: 80 * time.Millisecond, P95: 98 * time.Millisecond},
	}
	wantFS := []calllog.Bucket{{Start: t0}, {Start: t0.Add(time.Minute)}, {Start: t0.Add(2 * time.Minute)},
		{Start: t0.Add(3 * time.Minute), Count: 4, P50: 2 * time.Second, P95: 4 * time.Second}}
	if len(sum.Rows) != 2 || !reflect.DeepEqual(sum.Rows[0].Series, wantDemo) || !reflect.DeepEqual(sum.Rows[1].Series, wantFS) {
		t.Errorf("series =\n%+v\nwant\n%+v\n%+v", sum.Rows, wantDemo, wantFS)
	}
	if len(sum.Total.Series) != 4 || sum.Total.Series[0].Count != 59 || sum.Total.Series[3].Count != 4 {
		t.Errorf("total series = %+v", sum.Total.Series)
	}
}

// TestRecordLine: a line holds what the package doc promises, and no body
// unless one was given.
func TestRecordLine(t *testing.T) {
	dir := t.TempDir()
	l := calllog.Open(calllog.Options{Dir: dir})
	l.Add(calllog.Record{Time: time.Now(), Caller: "c", Via: "unix", Server: "s", Tool: "t", Key: "global",
		Session: "abc", Duration: 1500 * time.Microsecond, Outcome: calllog.Failed, Error: "child-failed", BytesIn: 3})
	l.Add(calllog.Record{Time: time.Now(), Server: "s", Tool: "t", Outcome: calllog.OK,
		Arguments: calllog.Body([]byte(`{"a":1}`)), Result: calllog.Body(bytes.Repeat([]byte(" "), calllog.BodyLimit+1))})
	l.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "calls-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("files = %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), data)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"time": m["time"], "caller": "c", "via": "unix", "server": "s", "tool": "t", "key": "global",
		"session": "abc", "durationUs": 1500.0, "outcome": "error", "error": "child-failed", "bytesIn": 3.0, "bytesOut": 0.0}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("line = %v\nwant %v", m, want)
	}
	var r calllog.Record
	if err := json.Unmarshal([]byte(lines[1]), &r); err != nil {
		t.Fatal(err)
	}
	if string(r.Arguments) != `{"a":1}` || !strings.Contains(string(r.Result), "bytes, over the records body limit") {
		t.Errorf("bodies = %s / %s", r.Arguments, r.Result)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, %v", fi.Mode(), err)
	}
}

// TestUnwritable: a directory that cannot be created costs one warning
// and a count per record; Add never blocks; writing resumes once it can.
func TestUnwritable(t *testing.T) {
	base := t.TempDir()
	blocker := filepath.Join(base, "state")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil { // a file where the directory's parent should be
		t.Fatal(err)
	}
	dir := filepath.Join(blocker, "records")
	var w warnings
	clk := &clock{t: time.Now()}
	l := calllog.Open(calllog.Options{Dir: dir, Logger: w.logger(), Now: clk.Now})
	t.Cleanup(func() { l.Close() })
	for range 50 {
		l.Add(calllog.Record{Time: clk.Now(), Server: "s", Tool: "t", Outcome: calllog.OK})
	}
	syncLog(t, l)
	c := l.Counters()
	if c.Failed != 50 || c.Written != 0 || c.LastError == "" || w.count() != 1 {
		t.Fatalf("counters = %+v, %d warnings (%v); want 50 failed, one warning", c, w.count(), w.msgs)
	}

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	l.Add(calllog.Record{Time: clk.Now(), Server: "s", Tool: "t", Outcome: calllog.OK})
	syncLog(t, l)
	if c := l.Counters(); c.Failed != 51 || c.Written != 0 {
		t.Fatalf("within the retry interval: counters = %+v, want one more failed", c)
	}
	clk.Add(calllog.RetryInterval)
	l.Add(calllog.Record{Time: clk.Now(), Server: "s", Tool: "t", Outcome: calllog.OK})
	syncLog(t, l)
	if c := l.Counters(); c.Written != 1 || c.LastError != "" || w.count() != 1 {
		t.Fatalf("after the retry interval: counters = %+v, %d warnings", c, w.count())
	}
}

// TestFullChannelDrops: a writer that is behind drops and counts, and
// Add returns at once.
func TestFullChannelDrops(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	now := func() time.Time {
		once.Do(func() { entered <- struct{}{}; <-release }) // the writer's first record holds it
		return time.Now()
	}
	l := calllog.Open(calllog.Options{Dir: t.TempDir(), Buffer: 2, Now: now})
	t.Cleanup(func() { l.Close() })
	l.Add(calllog.Record{Server: "s", Tool: "t"})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer never took the first record")
	}
	for range 10 {
		l.Add(calllog.Record{Server: "s", Tool: "t"}) // 2 fit, 8 drop
	}
	if c := l.Counters(); c.Dropped != 8 {
		t.Fatalf("dropped = %d, want 8", c.Dropped)
	}
	close(release)
	syncLog(t, l)
	if c := l.Counters(); c.Written != 3 || c.Dropped != 8 {
		t.Fatalf("counters = %+v, want 3 written, 8 dropped", c)
	}
}

// TestRotation: files close at MaxBytes, the oldest go beyond MaxFiles,
// files past MaxAge go, and the directory stays bounded.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{t: time.Now()}
	const maxBytes, maxFiles = 2000, 3
	l := calllog.Open(calllog.Options{Dir: dir, MaxBytes: maxBytes, MaxFiles: maxFiles, MaxAge: 48 * time.Hour, Now: clk.Now})
	t.Cleanup(func() { l.Close() })
	for i := range 200 {
		clk.Add(time.Millisecond) // distinct file names
		l.Add(calllog.Record{Time: clk.Now(), Server: "s", Tool: fmt.Sprint("t", i), Outcome: calllog.OK})
		if i%10 == 0 {
			syncLog(t, l) // rotation happens between records
		}
	}
	syncLog(t, l)
	files, _ := filepath.Glob(filepath.Join(dir, "calls-*.jsonl"))
	if len(files) != maxFiles {
		t.Fatalf("%d files, want %d: %v", len(files), maxFiles, files)
	}
	var total int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > maxBytes {
			t.Errorf("%s is %d bytes, over %d", f, fi.Size(), maxBytes)
		}
		total += fi.Size()
	}
	sum, err := calllog.Summarize(dir, calllog.Query{})
	if err != nil || sum.Total.Count == 0 || sum.Total.Count >= 200 {
		t.Fatalf("summary after pruning = %+v, %v", sum.Total, err)
	}

	// Past a day, the file is closed; past MaxAge, the old ones go.
	clk.Add(72 * time.Hour)
	l.Add(calllog.Record{Time: clk.Now(), Server: "s", Tool: "late", Outcome: calllog.OK})
	syncLog(t, l)
	after, _ := filepath.Glob(filepath.Join(dir, "calls-*.jsonl"))
	if len(after) != 1 || after[0] == files[len(files)-1] {
		t.Fatalf("after MaxAge: files = %v (before %v)", after, files)
	}
}

// TestReopenAppends: a new Log goes on with the newest file while it is
// young and small.
func TestReopenAppends(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		l := calllog.Open(calllog.Options{Dir: dir})
		l.Add(calllog.Record{Time: time.Now(), Server: "s", Tool: fmt.Sprint(i), Outcome: calllog.OK})
		l.Close()
	}
	files, _ := filepath.Glob(filepath.Join(dir, "calls-*.jsonl"))
	sum, err := calllog.Summarize(dir, calllog.Query{})
	if len(files) != 1 || err != nil || sum.Total.Count != 3 {
		t.Fatalf("files %v, summary %+v, %v", files, sum.Total, err)
	}
}

// TestSkipsBrokenLines: a line cut short (a full disk) is counted, not fatal.
func TestSkipsBrokenLines(t *testing.T) {
	dir := t.TempDir()
	l := calllog.Open(calllog.Options{Dir: dir})
	l.Add(calllog.Record{Time: time.Now(), Server: "s", Tool: "t", Outcome: calllog.OK})
	l.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "calls-*.jsonl"))
	f, err := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-11-30T12:00:00Z","server":"s","to`)
	f.Close()
	sum, err := calllog.Summarize(dir, calllog.Query{})
	if err != nil || sum.Total.Count != 1 || sum.Skipped != 1 {
		t.Fatalf("summary = %+v, %v", sum, err)
	}
}

func TestParseBy(t *testing.T) {
	for _, s := range []string{"", "server", "tool", "caller"} {
		if b, err := calllog.ParseBy(s); err != nil || string(b) != s {
			t.Errorf("ParseBy(%q) = %q, %v", s, b, err)
		}
	}
	if _, err := calllog.ParseBy("host"); err == nil || !strings.Contains(err.Error(), "server, tool or caller") {
		t.Errorf("ParseBy(host) = %v", err)
	}
}

func TestPercentile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {95, 10}, {99, 10}, {10, 1}, {11, 2}, {0, 1}} {
		if got := calllog.Percentile(d, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if calllog.Percentile(nil, 50) != 0 {
		t.Error("p50 of nothing is not 0")
	}
}

// TestNilLog: a nil Log (records off) takes records and does nothing.
func TestNilLog(t *testing.T) {
	var l *calllog.Log
	l.Add(calllog.Record{Server: "s"})
	if c := l.Counters(); c != (calllog.Counters{}) || l.Sync(t.Context()) != nil || l.Close() != nil {
		t.Fatalf("nil log: %+v", c)
	}
}
