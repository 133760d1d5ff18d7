package pool

import (
	"log/slog"
	"time"

	"mcpx.dev/mcpx/pool/execid"
)

// The exec watch: a child is replaced exactly when what it runs changed
// (docs/children.md, "Spawning a child"). Each running stdio child's
// executable identity (package execid) was computed just before its
// start; on each tick its chain is stat'ed, and only a stat that moved
// costs a new identity. A changed identity drains the instance and puts a
// new one, started at once, under the same key.

func (p *Pool) execLoop(every time.Duration) {
	defer p.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.CheckExec()
		}
	}
}

// CheckExec stats every running stdio child's executable and replaces the
// instances whose identity changed: in-flight calls finish on the old
// child, new calls go to the replacement, and one EventRestart says
// "executable changed: " and why (execid.ID.Why: bytes changed, location
// changed, program file changed, package files changed) with the path of
// what changed (the executable, the program file among its arguments, or
// that program's package.json; see package execid). It returns how many it replaced. An executable or
// program file that is gone leaves its child running, with one warning.
// Instances of call: keys, and of keys whose owner is gone (the reaper's),
// are left alone. The exec watch calls it on its tick; the broker after a
// config reload.
func (p *Pool) CheckExec() int {
	p.execMu.Lock()
	defer p.execMu.Unlock()
	type running struct {
		inst *instance
		g    *generation
	}
	var all []running
	p.mu.Lock()
	for _, inst := range p.instances {
		if inst.phase == phaseReady && !inst.ephemeral && inst.gen != nil && inst.gen.exec != nil {
			all = append(all, running{inst, inst.gen})
		}
	}
	p.unlock()
	n := 0
	for _, r := range all {
		if id, changed := p.execChanged(r.inst, r.g); changed && p.replace(r.inst, r.g, id) {
			n++
		}
	}
	return n
}

// execChanged reports whether g's executable is another program now, and
// its new identity. p.execMu is held.
func (p *Pool) execChanged(inst *instance, g *generation) (execid.ID, bool) {
	st := execid.StatOf(*g.exec)
	if st.Equal(g.execStat) {
		return execid.ID{}, false
	}
	id := execid.Of(g.exec.Command, g.execOpts)
	g.execStat = st
	if id.Lost(*g.exec) {
		if !g.execMissing {
			g.execMissing = true
			what, path := "executable", g.exec.Path
			if !id.Missing() {
				what, path = "program file", g.exec.Entry
			}
			p.log.Warn("a running child's "+what+" is gone; the child keeps running", "server", inst.def.Name,
				"key", inst.key.key, "instance", inst.id, "pid", g.pid(), "command", g.exec.Command, "path", path)
		}
		return id, false
	}
	g.execMissing = false
	if id.Value == g.exec.Value {
		g.execStat = id.Stat
		p.log.Info("a running child's executable moved but is the same program; keeping the child", "server", inst.def.Name,
			"key", inst.key.key, "instance", inst.id, "pid", g.pid(), "path", id.Path, "exec", id.Value)
		return id, false
	}
	return id, true
}

// replace drains inst (whose child g runs an executable that changed to
// id) and puts a new instance, started at once, under its key, unless it
// changed meanwhile or its key's owner is gone.
func (p *Pool) replace(inst *instance, g *generation, id execid.ID) bool {
	p.mu.Lock()
	defer p.unlock()
	if p.closed || inst.gen != g || inst.phase != phaseReady || p.instances[inst.key] != inst ||
		(p.opts.KeyAlive != nil && !p.opts.KeyAlive(inst.key.key)) {
		return false
	}
	why := "executable changed: " + id.Why(*g.exec)
	path := id.Changed(*g.exec)
	p.logLocked(p.log, slog.LevelInfo, why+"; replacing instance", "server", inst.def.Name, "key", inst.key.key, "instance", inst.id,
		"pid", g.pid(), "path", path, "was", g.exec.Value, "now", id.Value)
	p.replaceLocked(inst, &event{notice: EventRestart, reason: why, path: path})
	p.kickLocked()
	return true
}
