package pool

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"
)

// The reaper: idle instances past their timeout, and caller-owned ones
// whose owner is gone, are stopped on a tick (reapLoop) or on Reap.

// ownerCheckInterval is how often caller-owned instances are checked for a
// living owner between full reaps: a dead pid's child goes within a second,
// not at the next idle reap.
const ownerCheckInterval = time.Second

// reapLoop checks owners every ownerCheckInterval (or every, if shorter)
// and reaps in full once every has passed. The ticker only wakes it: when
// a full reap is due is read from Options.Now, the clock reap judges
// idleness by, so a test's clock drives both.
func (p *Pool) reapLoop(every time.Duration) {
	defer p.wg.Done()
	t := time.NewTicker(min(every, ownerCheckInterval))
	defer t.Stop()
	last := p.opts.Now()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			if now := p.opts.Now(); now.Sub(last) >= every {
				last = now
				p.Reap()
			} else {
				p.reap(false)
			}
		}
	}
}

// Reap stops idle instances past their idle timeout and caller-owned
// instances whose owner is gone. The background reaper calls it on a tick.
func (p *Pool) Reap() { p.reap(true) }

// reap stops idle instances whose owner is gone and, with idle set, those
// idle past their timeout.
func (p *Pool) reap(idle bool) {
	now := p.opts.Now()
	p.mu.Lock()
	for _, inst := range p.instances {
		if !inst.idle() || inst.waiting > 0 {
			continue
		}
		// An ephemeral (call:) instance idle for a whole check lost its
		// caller during the start; other caller-owned keys ask their owner.
		gone := (inst.ephemeral && now.Sub(inst.lastUsed) >= ownerCheckInterval) ||
			(p.opts.KeyAlive != nil && !p.opts.KeyAlive(inst.key.key))
		timeout := cmp.Or(inst.def.IdleTimeout, p.opts.IdleTimeout)
		if p.opts.KeyIdleTimeout != nil {
			timeout = cmp.Or(p.opts.KeyIdleTimeout(inst.key.key), timeout)
		}
		if gone || (idle && now.Sub(inst.lastUsed) >= timeout && !p.keptLocked(inst)) {
			why := fmt.Sprintf("idle for %s (idle timeout %s)", now.Sub(inst.lastUsed).Round(time.Second), timeout)
			switch {
			case inst.ephemeral && gone:
				why = "its one call's caller went away during the start"
			case gone:
				why = "its owner is gone"
			}
			p.removeLocked(inst, EventReap, why)
			p.stats.Reaps++
			p.logLocked(p.log, slog.LevelInfo, "reaping instance", "server", inst.def.Name, "key", inst.key.key, "instance", inst.id, "why", why)
			p.stopAsync(inst, why)
		}
	}
	p.kickLocked()
	p.unlock()
}
