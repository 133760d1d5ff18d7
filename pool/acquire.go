package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"mcpx.dev/mcpx/observe/tracing"
)

// The acquire path: a caller finds its instance, or makes it when there is
// room (evicting the instance idle the longest at a cap), or waits in line
// for room; then it waits for the instance's start, its exclusive token or
// a dead child's cleanup as needed, and takes the ready child for its call.

// acquireTraced is acquire in a pool-wait span when tracing is on.
func (p *Pool) acquireTraced(ctx context.Context, t Target) (*instance, *generation, error) {
	if !tracing.Enabled() {
		return p.acquire(ctx, t)
	}
	ctx, sp := tracing.StartChild(ctx, "mcpx.pool.wait")
	defer sp.End()
	sp.SetAttributes(attribute.String("mcpx.server", t.Server))
	inst, g, err := p.acquire(ctx, t)
	if err != nil {
		tracing.Fail(sp, err)
	} else {
		sp.SetAttributes(attribute.String("mcpx.instance", inst.id))
	}
	return inst, g, err
}

func (p *Pool) acquire(ctx context.Context, t Target) (*instance, *generation, error) {
	// held is the instance this caller waited for, its waiting count
	// raised so that nobody evicted it meanwhile; lowered under the same
	// lock that then acquires it.
	var held *instance
	for {
		p.mu.Lock()
		if held != nil {
			held.waiting--
			held = nil
		}
		if p.closed {
			p.kickLocked()
			p.unlock()
			return nil, nil, p.perr("acquire", t, ErrClosed, "the daemon is shutting down")
		}
		inst := p.instances[t.key()]
		if inst == nil {
			var err error
			if inst, err = p.newInstanceLocked(ctx, t); err != nil {
				p.kickLocked()
				p.unlock()
				return nil, nil, err
			}
		}
		now := p.opts.Now()
		switch inst.phase {
		case phaseBackoff:
			if now.Before(inst.backoffUntil) {
				e := p.perr("start", t, ErrBackoff, inst.lastErr)
				e.RetryAfter = inst.backoffUntil.Sub(now)
				e.StderrTail = inst.lastTail
				p.kickLocked()
				p.unlock()
				return nil, nil, e
			}
			fallthrough
		case phaseIdle:
			if tracing.Enabled() {
				inst.traceParent = trace.SpanContextFromContext(ctx)
			}
			if !p.startLocked(inst, now) {
				p.unlock()
				return nil, nil, p.perr("start", t, ErrStart, "internal error: the instance refused to start")
			}
		case phaseWedged:
			// Its child is being killed: wait for its watcher, then start
			// afresh.
			g := inst.gen
			inst.waiting++
			held = inst
			p.unlock()
			select {
			case <-g.dead:
				continue
			case <-ctx.Done():
				p.unhold(inst)
				return nil, nil, p.ctxErr(ctx, t, "waiting for a wedged child to be killed")
			}
		}
		if a := inst.starting; a != nil {
			inst.waiting++
			held = inst
			p.unlock()
			select {
			case <-a.done:
				if a.err != nil {
					p.unhold(inst)
					return nil, nil, a.err
				}
				continue
			case <-ctx.Done():
				p.unhold(inst)
				return nil, nil, p.ctxErr(ctx, t, "waiting for the child to start")
			}
		}
		g := inst.gen
		select {
		case <-g.sess.Done():
			// Dead, and its watcher has not caught up yet: wait for it,
			// then start afresh rather than hand out a dead session.
			p.unlock()
			select {
			case <-g.dead:
				continue
			case <-ctx.Done():
				return nil, nil, p.ctxErr(ctx, t, "waiting for a dead child to be cleaned up")
			}
		default:
		}
		if inst.def.Exclusive {
			inst.waiting++
			p.unlock()
			select {
			case inst.sem <- struct{}{}:
			case <-ctx.Done():
				p.unhold(inst)
				return nil, nil, p.ctxErr(ctx, t, "waiting for the exclusive instance; another caller holds it")
			}
			p.mu.Lock()
			inst.waiting--
			if inst.gen != g || inst.phase != phaseReady {
				<-inst.sem
				p.kickLocked()
				p.unlock()
				continue
			}
		}
		if !p.updateLocked(inst, &event{kind: evAcquire, now: now, gen: g}) {
			if inst.sem != nil {
				<-inst.sem
			}
			p.unlock()
			return nil, nil, p.perr("acquire", t, ErrStart, "internal error: the instance refused the call")
		}
		p.unlock()
		return inst, g, nil
	}
}

// unhold lowers inst's waiting count for a caller that gives up on it.
func (p *Pool) unhold(inst *instance) {
	p.mu.Lock()
	inst.waiting--
	p.kickLocked()
	p.unlock()
}

func (p *Pool) ctxErr(ctx context.Context, t Target, what string) *Error {
	e := p.perr("acquire", t, ErrTimeout, what)
	if errors.Is(ctx.Err(), context.Canceled) {
		e.Err = ErrCanceled
	}
	e.Cause = ctx.Err()
	return e
}

// newInstanceLocked creates the instance for t. At a cap it evicts the
// instance idle the longest; when every instance is busy it waits in line
// (unlocking p.mu meanwhile), bounded by ctx and Options.WaitTimeout.
func (p *Pool) newInstanceLocked(ctx context.Context, t Target) (*instance, error) {
	def := p.servers[t.Server]
	if def == nil {
		return nil, p.perr("acquire", t, ErrUnknownServer, "")
	}
	if len(p.queue) == 0 && p.roomLocked(def, t.Key) {
		return p.createLocked(def, t)
	}
	w := &slotWaiter{t: t, ready: make(chan struct{})}
	p.queue = append(p.queue, w)
	p.stats.Waits++
	p.serveQueueLocked()
	timedOut := false
	if w.inst == nil && w.err == nil {
		p.unlock()
		timer := time.NewTimer(p.opts.WaitTimeout)
		select {
		case <-w.ready:
		case <-ctx.Done():
		case <-timer.C:
			timedOut = true
		}
		timer.Stop()
		p.mu.Lock()
	}
	select {
	case <-w.ready:
		// Served, perhaps just as the wait ended: take what it got.
		if w.inst != nil {
			w.inst.waiting--
			return w.inst, nil
		}
		return nil, w.err
	default:
	}
	p.queue = slices.DeleteFunc(p.queue, func(x *slotWaiter) bool { return x == w })
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, p.ctxErr(ctx, t, "waiting for room for a new instance")
	}
	p.stats.Exhausted++
	max := cmp.Or(def.Max, DefaultMax)
	detail := fmt.Sprintf("server %q has its maximum of %d instances, or the daemon its pool.maxInstances of %d, all busy", def.Name, max, p.opts.MaxInstances)
	if timedOut {
		detail += fmt.Sprintf(", for the whole pool.waitTimeout (%s)", p.opts.WaitTimeout)
	} else {
		detail += " until the call's deadline"
	}
	e := p.perr("acquire", t, ErrExhausted, detail+"; raise the server's max, or retry")
	e.RetryAfter = time.Second
	e.Cause = ctx.Err()
	p.logLocked(p.log, slog.LevelInfo, "refused a call: no room for a new instance", "server", def.Name, "key", t.Key, "max", max,
		"maxInstances", p.opts.MaxInstances, "waitTimeout", p.opts.WaitTimeout, "deadlineFirst", !timedOut)
	return nil, e
}

// roomLocked reports whether an instance of def may be created now,
// evicting the instance idle the longest (of def's server at its max, of
// any server at the daemon's cap) to make room. forKey is the key that
// needs it, for the log.
func (p *Pool) roomLocked(def *Server, forKey string) bool {
	if p.countLocked(def.Name) >= cmp.Or(def.Max, DefaultMax) &&
		!p.evictLRULocked(forKey, func(i *instance) bool { return i.def.Name == def.Name }) {
		return false
	}
	if len(p.instances) >= p.opts.MaxInstances && !p.evictLRULocked(forKey, func(*instance) bool { return true }) {
		return false
	}
	return true
}

// createLocked makes the instance for t, in phase idle. There is room.
func (p *Pool) createLocked(def *Server, t Target) (*instance, error) {
	inst := &instance{
		id:        fmtID(def.Name, p.seq[def.Name]+1),
		key:       t.key(),
		def:       def,
		root:      t.Root,
		cwd:       t.Cwd,
		degraded:  t.Degraded,
		ephemeral: t.Ephemeral,
		sandbox:   t.Sandbox,
		index:     p.lowestIndexLocked(def.Name),
		phase:     phaseIdle,
		lastUsed:  p.opts.Now(),
		created:   p.opts.Now(),
	}
	v := inst.vars()
	if inst.perInstance() {
		// Checked now with stand-ins; made for real at the first start.
		v.tmpdir, v.alloc = "/", map[string]string{}
		for name := range def.Allocate {
			v.alloc[name] = "0"
		}
	} else {
		inst.specReady = true
	}
	spec, err := resolveSpawn(def, v)
	if err != nil {
		return nil, p.perr("start", t, ErrSpawnConfig, err.Error())
	}
	if inst.specReady {
		inst.spec = spec
	}
	p.seq[def.Name]++
	if def.Exclusive {
		inst.sem = make(chan struct{}, 1)
	}
	if p.indexes[def.Name] == nil {
		p.indexes[def.Name] = map[int]*instance{}
	}
	p.indexes[def.Name][inst.index] = inst
	p.instances[inst.key] = inst
	p.byID[inst.id] = inst
	return inst, nil
}

// fmtID is the id of a server's n-th instance.
func fmtID(server string, n int) string { return fmt.Sprintf("%s-%d", server, n) }

// kickLocked serves the queue if anyone is in it: call it whenever an
// instance may have become evictable or left the pool.
func (p *Pool) kickLocked() {
	if len(p.queue) > 0 {
		p.serveQueueLocked()
	}
}

// serveQueueLocked gives room to the callers in line, oldest first. One
// whose server is at its max does not hold up a caller of another server
// with room; among callers that compete for the same room, the oldest wins.
func (p *Pool) serveQueueLocked() {
	p.queue = slices.DeleteFunc(p.queue, func(w *slotWaiter) bool {
		def := p.servers[w.t.Server]
		switch {
		case p.closed:
			w.err = p.perr("acquire", w.t, ErrClosed, "the daemon is shutting down")
		case def == nil:
			w.err = p.perr("acquire", w.t, ErrUnknownServer, "")
		case p.instances[w.t.key()] != nil:
			// Someone made it meanwhile: share it.
			w.inst = p.instances[w.t.key()]
		case !p.roomLocked(def, w.t.Key):
			return false
		default:
			w.inst, w.err = p.createLocked(def, w.t)
		}
		if w.inst != nil {
			w.inst.waiting++
		}
		close(w.ready)
		return true
	})
}
func (p *Pool) countLocked(server string) int {
	n := 0
	for k := range p.instances {
		if k.server == server {
			n++
		}
	}
	return n
}

// evictLRULocked stops the evictable instance matching ok that has been
// idle the longest, to make room for forKey.
func (p *Pool) evictLRULocked(forKey string, ok func(*instance) bool) bool {
	var victim *instance
	for _, inst := range p.instances {
		if inst.evictable() && ok(inst) && (victim == nil || inst.lastUsed.Before(victim.lastUsed)) {
			victim = inst
		}
	}
	if victim == nil {
		return false
	}
	idle := p.opts.Now().Sub(victim.lastUsed).Round(time.Millisecond)
	p.logLocked(p.log, slog.LevelInfo, "evicting the instance idle the longest to make room", "server", victim.def.Name, "key", victim.key.key,
		"instance", victim.id, "idleFor", idle, "for", forKey)
	p.stats.Evictions++
	p.removeLocked(victim, EventEvict, "evicted for "+forKey)
	p.stopAsync(victim, "evicted for "+forKey)
	return true
}
