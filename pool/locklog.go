package pool

import (
	"context"
	"log/slog"
	"time"
)

// The pool does no file I/O under p.mu. Its logger's handler may write and
// rotate files synchronously (package logs), and a slow disk must not stall
// every caller waiting for the lock: records made while p.mu is held are
// gathered (logLocked) and emitted by whoever releases it (unlock), once it
// is released. p.mu is released only by unlock and unlockThen
// (TestPoolLockReleasedOnlyByUnlock keeps it so).

// logRecord is a record gathered under p.mu: the handler of the logger it
// was made for, and the record, stamped when it was made.
type logRecord struct {
	h slog.Handler
	r slog.Record
}

// logLocked gathers a record of l (p.log, or a logger derived from it) for
// unlock to emit. p.mu must be held.
func (p *Pool) logLocked(l *slog.Logger, level slog.Level, msg string, args ...any) {
	if !l.Enabled(context.Background(), level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, msg, 0)
	r.Add(args...)
	p.logs = append(p.logs, logRecord{l.Handler(), r})
}

// unlock releases p.mu, then emits the records gathered under it, in order.
// Most critical sections gather none: that path stays a plain Unlock.
func (p *Pool) unlock() {
	if len(p.logs) == 0 {
		p.mu.Unlock()
		return
	}
	p.unlockThen(nil)
}

// unlockThen is unlock, running first (if not nil) after p.mu is released
// and before the records are emitted: what others wait for is not delayed
// by the log.
func (p *Pool) unlockThen(first func()) {
	recs := p.logs
	p.logs = nil
	p.mu.Unlock()
	if first != nil {
		first()
	}
	for _, rec := range recs {
		rec.h.Handle(context.Background(), rec.r) //nolint:errcheck // as slog.Logger does: a failed write is the handler's to report
	}
}
