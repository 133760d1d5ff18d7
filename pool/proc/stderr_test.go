package proc

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

type msgCount map[string]int

func (m msgCount) Enabled(context.Context, slog.Level) bool { return true }
func (m msgCount) WithAttrs([]slog.Attr) slog.Handler       { return m }
func (m msgCount) WithGroup(string) slog.Handler            { return m }
func (m msgCount) Handle(_ context.Context, r slog.Record) error {
	m[r.Message]++
	return nil
}

// TestLineLimiter: a burst is logged, a flood is not, one report comes per
// interval while the flood lasts, and a child that calms down is logged
// again after one report.
func TestLineLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	counts := msgCount{}
	log := slog.New(counts)
	l := newLineLimiter(func() time.Time { return now })
	var suppressed atomic.Int64
	l.counter = &suppressed
	line := []byte("x")
	// 30 s of 1,000 lines a second.
	for range 30000 {
		l.log(log, line)
		now = now.Add(time.Millisecond)
	}
	// The burst, what refilled while it was logged, and a report at 10 s
	// and 20 s.
	if n := counts["child stderr"]; n < stderrBurst || n > stderrBurst+stderrRate/4 || counts["child stderr suppressed"] != 2 {
		t.Errorf("flood: %v, want about %d lines and 2 reports", counts, stderrBurst)
	}
	if got, want := suppressed.Load(), int64(30000-counts["child stderr"]); got != want {
		t.Errorf("counted %d suppressed lines, want %d (every line not logged)", got, want)
	}
	// Then one line a second: logged again once the bucket has refilled.
	clear(counts)
	for range 10 {
		now = now.Add(time.Second)
		l.log(log, line)
	}
	if n := counts["child stderr suppressed"]; n < 1 || n > 2 || counts["child stderr"] < 5 || l.suppressing {
		t.Errorf("after the flood: %v, want a last report and the lines logged again", counts)
	}
}
