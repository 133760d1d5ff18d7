package pool_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/pool"
)

// stderrLog counts what a pool logs about child stderr, and how many bytes
// of text log that is.
type stderrLog struct {
	mu         sync.Mutex
	lines      int // "child stderr" records
	suppressed int // sum of "lines" over "child stderr suppressed" records
	reports    int // "child stderr suppressed" records
	bytes      int // of all records, as slog's text handler writes them
}

func (s *stderrLog) Enabled(context.Context, slog.Level) bool { return true }
func (s *stderrLog) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s *stderrLog) WithGroup(string) slog.Handler            { return s }
func (s *stderrLog) Handle(ctx context.Context, r slog.Record) error {
	var w countWriter
	slog.NewTextHandler(&w, nil).Handle(ctx, r)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes += int(w)
	switch r.Message {
	case "child stderr":
		s.lines++
	case "child stderr suppressed":
		s.reports++
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "lines" {
				s.suppressed += int(a.Value.Int64())
			}
			return true
		})
	}
	return nil
}

func (s *stderrLog) counts() (lines, suppressed, reports, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines, s.suppressed, s.reports, s.bytes
}

type countWriter int

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

// TestFaultStderrFlood: a child writing 200,000 stderr lines gets a bounded
// number of log records, the rest counted in "suppressed" records; every
// line is accounted for, and the stderr tail still ends with the last ones.
func TestFaultStderrFlood(t *testing.T) {
	const flood = 200000
	logs := &stderrLog{}
	def := demoServer(t, "flood")
	def.Command, def.Args = "/bin/sh", []string{"-c", `seq 1 200000 >&2; exec "$0"`, os.Args[0]}
	p := newPool(t, pool.Options{Logger: slog.New(logs)}, def)
	tg := pool.Target{Server: "flood", Key: "global"}
	start := time.Now()
	mustCall(t, p, tg, "pid", nil)
	_, err := call(t.Context(), p, tg, "crash", map[string]any{"code": 3, "stderr": "last words"})
	var pe *pool.Error
	if !errors.As(err, &pe) || !errors.Is(err, pool.ErrCrashed) {
		t.Fatalf("crash: %v, want ErrCrashed", err)
	}
	if !strings.Contains(pe.StderrTail, "200000\n") || !strings.HasSuffix(strings.TrimSpace(pe.StderrTail), "last words") {
		t.Errorf("stderr tail = %q, want it to end with 200000 and last words", pe.StderrTail)
	}
	// The suppressed count is complete once the reader has seen EOF.
	var lines, suppressed, reports, bytes int
	deadline := time.Now().Add(10 * time.Second)
	for {
		lines, suppressed, reports, bytes = logs.counts()
		if lines+suppressed >= flood+1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	t.Logf("%d stderr lines in %v: %d logged, %d suppressed in %d records; %d bytes of log", flood+1, elapsed.Round(time.Millisecond), lines, suppressed, reports, bytes)
	if lines+suppressed != flood+1 {
		t.Errorf("logged %d + suppressed %d lines, want %d in all", lines, suppressed, flood+1)
	}
	if reports == 0 {
		t.Error("no suppressed-lines record")
	}
	// The bound follows from the limiter and how long the flood took, so
	// that a slow machine cannot fail it: the burst, the rate, and one
	// report per interval, at recovery and at the end.
	if maxLines := 200 + int(elapsed.Seconds()*50) + 1; lines > maxLines {
		t.Errorf("logged %d stderr lines in %v, want at most %d", lines, elapsed, maxLines)
	}
	if maxReports := int(elapsed/(10*time.Second)) + 2; reports > maxReports {
		t.Errorf("%d suppressed-lines records, want at most %d", reports, maxReports)
	}
}
