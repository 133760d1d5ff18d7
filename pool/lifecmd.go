package pool

import (
	"context"
	"log/slog"
	"slices"
)

// The lifecycle commands (`mcpx restart`, `mcpx refresh`): a server's
// instances drained and replaced on request, its schema cache dropped and
// its tools listed again.

// Restarted is what Restart did.
type Restarted struct {
	Replaced []string // instances whose running or starting child was drained, with a new one started under the same key
	Stopped  []string // instances with no child (idle, backing off: the next call starts afresh) or of call: keys, stopped
}

// Restart drains and replaces every instance of the servers match accepts
// (by pool name): in-flight calls finish on the old children, new calls go
// to replacements started at once, each with an EventRestart saying why.
// An instance with no child, of a call: key, or whose key's owner is gone
// is stopped, not replaced; its backoff is forgotten. Ids are sorted.
func (p *Pool) Restart(match func(server string) bool, why string) Restarted {
	return p.restart(func(k instKey) bool { return match(k.server) }, why)
}

// RestartAccount is Restart of the instances whose Target.Account is
// account alone: one caller's sign-in renews that caller's sessions, not
// another's.
func (p *Pool) RestartAccount(match func(server string) bool, account, why string) Restarted {
	return p.restart(func(k instKey) bool { return match(k.server) && k.account == account }, why)
}

func (p *Pool) restart(match func(instKey) bool, why string) Restarted {
	var res Restarted
	p.mu.Lock()
	defer p.unlock()
	if p.closed {
		return res
	}
	var all []*instance
	for _, inst := range p.instances {
		if match(inst.key) {
			all = append(all, inst)
		}
	}
	for _, inst := range all {
		running := inst.phase == phaseReady || inst.phase == phaseStarting || inst.phase == phaseWedged
		if running && !inst.ephemeral && (p.opts.KeyAlive == nil || p.opts.KeyAlive(inst.key.key)) {
			res.Replaced = append(res.Replaced, inst.id)
			p.replaceLocked(inst, &event{notice: EventRestart, reason: why})
			continue
		}
		res.Stopped = append(res.Stopped, inst.id)
		p.removeLocked(inst, EventRestart, why)
		p.stopAsync(inst, why)
	}
	p.kickLocked()
	slices.Sort(res.Replaced)
	slices.Sort(res.Stopped)
	return res
}

// replaceLocked drains inst, removed with ev, and puts a new instance,
// started at once, under its key, of its server's current definition.
func (p *Pool) replaceLocked(inst *instance, ev *event) {
	p.removeEvLocked(inst, ev)
	p.stopAsync(inst, ev.reason)
	def := p.servers[inst.key.server]
	if def == nil {
		def = inst.def
	}
	next, err := p.createLocked(def, Target{Server: inst.key.server, Key: inst.key.key, Root: inst.root, Cwd: inst.cwd, Degraded: inst.degraded,
		Sandbox: inst.sandbox, Account: inst.key.account})
	if err != nil {
		p.logLocked(p.log, slog.LevelWarn, "cannot make the replacement instance; the next call makes one", "server", inst.def.Name, "key", inst.key.key, "err", err)
		return
	}
	p.startLocked(next, p.opts.Now())
}

// Refreshed is what Refresh did.
type Refreshed struct {
	Dropped int               // schema cache entries dropped
	Listed  []string          // ready instances whose tools were listed again
	Failed  map[string]string // instances whose listing failed, with the error (the owner's to see)
}

// Refresh drops the schema cache's entries of the servers match accepts
// (by pool name), then lists the tools of each of their ready children
// again, bounded by ctx, which stores the fresh lists (and the child's
// initialize answer) anew. A server with no running child is listed by
// its next one.
func (p *Pool) Refresh(ctx context.Context, match func(server string) bool) Refreshed {
	res := Refreshed{Dropped: p.schema.drop(match)}
	type ready struct {
		id     string
		server string
		g      *generation
	}
	var live []ready
	p.mu.Lock()
	for _, inst := range p.instances {
		if match(inst.key.server) && inst.phase == phaseReady && inst.gen != nil && inst.gen.sess != nil {
			live = append(live, ready{inst.id, inst.def.Name, inst.gen})
		}
	}
	p.unlock()
	for _, r := range live {
		sess := r.g.sess
		p.schema.update(r.g.schemaKey, func(e *schemaEntry) {
			e.Server, e.Era, e.Protocol, e.Init = r.server, sess.Era(), sess.ProtocolVersion(), sess.InitializeResult()
		})
		if _, err := sess.Tools(ctx); err != nil {
			if res.Failed == nil {
				res.Failed = map[string]string{}
			}
			res.Failed[r.id] = err.Error()
			continue
		}
		res.Listed = append(res.Listed, r.id)
	}
	slices.Sort(res.Listed)
	return res
}

// drop removes the entries of the servers match accepts, and reports how
// many.
func (c *schemaCache) drop(match func(server string) bool) int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	n := 0
	for k, e := range c.entries {
		if match(e.Server) {
			delete(c.entries, k)
			n++
		}
	}
	if n > 0 {
		c.dirty = true
	}
	c.mu.Unlock()
	if n > 0 {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	return n
}
