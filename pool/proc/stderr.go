package proc

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// Child stderr is logged at most stderrRate lines a second per child, with
// bursts of stderrBurst: one chatty child must not flood the daemon's log
// (and a core with it). Past the limit, lines go only to the stderr ring,
// whose tail errors show, until the child has written under the limit for
// a while; the log gets one record saying how many lines were suppressed
// when that happens, every stderrReportEvery while it does not, and when
// the child's stderr closes.
const (
	stderrRate        = 50
	stderrBurst       = 200
	stderrReportEvery = 10 * time.Second
)

// lineLimiter is a token bucket of log lines, used by one goroutine.
type lineLimiter struct {
	now         func() time.Time
	tokens      float64
	last        time.Time     // of the last refill
	suppressing bool          // over the limit: drop lines until the bucket is half full again
	suppressed  int           // lines dropped since the last report
	reported    time.Time     // when the last suppression report was logged
	counter     *atomic.Int64 // if non-nil, counts every suppressed line (metrics)
}

func newLineLimiter(now func() time.Time) *lineLimiter {
	t := now()
	return &lineLimiter{now: now, tokens: stderrBurst, last: t, reported: t}
}

// log logs line at info if the bucket allows it, after the suppression
// report when one is due.
func (l *lineLimiter) log(log *slog.Logger, line []byte) {
	now := l.now()
	l.tokens = min(stderrBurst, l.tokens+now.Sub(l.last).Seconds()*stderrRate)
	l.last = now
	if l.suppressing && l.tokens >= stderrBurst/2 {
		l.suppressing = false // back under the limit
		l.flush(log, now)
	}
	if l.suppressing || l.tokens < 1 {
		// Dropped lines spend tokens too, so that only a child that
		// slowed down gets its lines logged again.
		l.suppressing = true
		l.tokens = max(0, l.tokens-1)
		l.suppressed++
		if l.counter != nil {
			l.counter.Add(1)
		}
		if now.Sub(l.reported) >= stderrReportEvery {
			l.flush(log, now)
		}
		return
	}
	l.tokens--
	log.Info("child stderr", "line", string(line))
}

// flush logs how many lines were suppressed since the last report, if any.
func (l *lineLimiter) flush(log *slog.Logger, now time.Time) {
	if l.suppressed == 0 {
		return
	}
	log.Warn("child stderr suppressed", "lines", l.suppressed, "maxPerSecond", stderrRate)
	l.suppressed = 0
	l.reported = now
}
