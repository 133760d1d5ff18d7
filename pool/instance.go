package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/execid"
	"mcpx.dev/mcpx/pool/proc"
	"mcpx.dev/mcpx/pool/proc/egress"
)

// instance is one (server, key) slot. Its root and spawn spec are fixed at
// creation; each (re)start makes a new generation.
type instance struct {
	// Constant after newInstanceLocked.
	id        string
	key       instKey
	def       *Server
	root      string
	degraded  string
	spec      spawnSpec
	sem       chan struct{} // exclusive servers: the one holder's token; send/receive without Pool.mu
	ephemeral bool          // a call: instance, stopped once its call is done
	created   time.Time     // when the instance was made (its first call)
	cwd       string        // the cwd of the caller that made it, for ${mcpx.cwd}
	index     int           // ${mcpx.index}: lowest free among its server's live instances when made
	sandbox   *confine.Spec // what confines its children (Target.Sandbox); nil = unconfined

	// spec is constant after newInstanceLocked, or after the first start
	// for a per-instance definition (see specReady); read it under Pool.mu
	// outside the start goroutine.

	// Guarded by Pool.mu. Read them anywhere under the lock; they change
	// only in apply (lifecycle.go), all together, along the edges listed
	// there.
	phase        phase
	gen          *generation   // the running child; set in ready, and while a stopper has not yet stopped it
	starting     *startAttempt // the start under way; set in starting, and when a stopper gave up waiting for it
	started      time.Time     // when the last start finished
	lastUsed     time.Time
	calls        int64
	inflight     int
	restarts     int
	failures     int // consecutive failed starts/crashes with no good call since
	backoffUntil time.Time
	lastErr      string
	lastTail     string
	lastLimit    string        // which sandbox limit ended the last child, "" none (not a lifecycle field)
	drained      chan struct{} // made on remove with calls in flight; closed when the last one ends
	removedWhy   string        // why it was removed, for the exit event

	// Guarded by Pool.mu; not lifecycle fields. A definition with
	// per-instance placeholders (perInstance) has its spec made, and its
	// resources acquired, at the first start (Pool.prepare) or at its
	// adoption (adoptSpecLocked): specReady says it was, and spec is
	// constant from then on. freed: its index and resources were released
	// (Pool.releaseLocked).
	res       *resources
	specReady bool
	freed     bool

	// Guarded by Pool.mu; not a lifecycle field. Callers that chose this
	// instance and wait for it (its start, its exclusive token, a wedged
	// child's death): while any do, it is not evicted, so an instance
	// always serves the caller that started it.
	waiting int
	// traceParent is the span of the caller about to start this instance
	// (set just before startLocked, when tracing is on): the start's spans
	// are its children.
	traceParent trace.SpanContext
}

// idle reports whether the instance can be stopped without cutting a call.
func (i *instance) idle() bool {
	return i.inflight == 0 && i.phase != phaseStarting && !i.phase.removed()
}

// evictable reports whether the instance may be stopped to make room for
// another: idle, and no caller is waiting to use it.
func (i *instance) evictable() bool { return i.idle() && i.waiting == 0 }

type startAttempt struct {
	done   chan struct{}
	err    error             // set before done is closed
	parent trace.SpanContext // the span of the caller that started it (tracing)
}

// generation is one running child and its session.
type generation struct {
	proc     *proc.Process // nil for url servers
	sess     *client.Session
	stopOnce sync.Once
	dead     chan struct{}  // closed by the watcher once the child is gone
	exitDesc string         // set before dead is closed
	tail     string         // set before dead is closed
	wedged   string         // why it was killed as wedged; set under Pool.mu before the kill, read after dead is closed
	probing  atomic.Bool    // a wedge probe is under way
	program  *Program       // what Options.Resolve said of its program; nil = a plain command
	mark     string         // an adapter's: the MarkEnv value of the processes its calls start; constant after start
	egress   *egress.Served // a confined child's egress, served until it stops; set before the generation is started

	// exec is the identity of a stdio child's executable, computed just
	// before it was started (nil for url children); constant after. What
	// the exec watch last saw is execStat, guarded by Pool.execMu.
	exec        *execid.ID
	execOpts    execid.Options
	execStat    execid.Stat // guarded by Pool.execMu
	execMissing bool        // guarded by Pool.execMu: warned that the executable is gone
	// schemaKey names the instance's effective definition with exec in
	// the schema cache; constant after start.
	schemaKey string
}

// execValue is g's executable identity as status shows it; "" for none.
func (g *generation) execValue() string {
	if g == nil || g.exec == nil {
		return ""
	}
	return g.exec.Value
}

func (g *generation) pid() int {
	if g == nil || g.proc == nil {
		return 0
	}
	return g.proc.Pid()
}

// stop ends the session and the child, once, however many callers ask.
func (g *generation) stop(ctx context.Context) {
	g.stopOnce.Do(func() {
		if g.sess != nil {
			g.sess.Close()
		}
		if g.egress != nil {
			// First: a child being stopped has nothing more to fetch, and
			// its network namespace, which the proxy's listener holds
			// open, goes as soon as the child does, not after the stop's
			// grace periods.
			g.egress.Close()
		}
		if g.proc != nil {
			g.proc.Stop(ctx)
		}
		if g.mark != "" {
			// The session's end cancelled and waited for the adapter's
			// calls; what they started and left is killed by its mark.
			proc.KillMarked(g.mark)
		}
	})
}

func (g *generation) deathDetail() string {
	if g.wedged != "" {
		return g.wedged
	}
	if g.exitDesc == "" {
		return "the child's session ended"
	}
	return "the child " + g.exitDesc
}

// watch waits for the child to end, then records why. One watcher per
// generation; it is the only place a crash is noticed.
func (p *Pool) watch(inst *instance, g *generation) {
	var exited <-chan struct{}
	if g.proc != nil {
		exited = g.proc.Exited()
	}
	select {
	case <-exited:
	case <-g.sess.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	g.stop(ctx)
	cancel()
	if g.proc != nil {
		g.exitDesc = g.proc.ExitDescription()
		g.tail = g.proc.FinalTail()
	} else if err := g.sess.Err(); err != nil {
		g.exitDesc = "session ended: " + err.Error()
	}
	// Update the instance before announcing the death: whoever waits on
	// dead then finds the instance ready to start again; the log comes
	// after.
	p.mu.Lock()
	p.exitedLocked(inst, g)
	p.unlockThen(func() { close(g.dead) })
	p.saveSurvivorsOf(inst.def, g)
}

// exitedLocked records that g, inst's child, is gone.
func (p *Pool) exitedLocked(inst *instance, g *generation) {
	ev := event{kind: evExited, now: p.opts.Now(), gen: g}
	if g.proc != nil && g.proc.Sandbox() != nil {
		inst.lastLimit = g.proc.Limit()
	}
	// An expired session is re-initialized on the next call: no failure.
	// Nor is a session given up over an answer larger than the limit
	// (client.TooLargeError.Unended): that call failed, not the child's
	// start, and counting it would put a server whose answers are too
	// large for the config into crash-loop backoff.
	err := g.sess.Err()
	crashed := inst.phase == phaseReady && !errors.Is(err, client.ErrSessionExpired) && !errors.Is(err, client.ErrMessageTooLarge)
	if crashed {
		ev.fail = &failure{g.deathDetail(), g.tail}
	}
	if !p.updateLocked(inst, &ev) {
		return
	}
	if res := p.releaseLocked(inst); res != nil {
		// A child that outlived its stopper's wait: its instance's
		// resources were kept for it until now.
		p.wg.Go(func() { p.releaseResources(inst, res) })
	}
	p.kickLocked()
	if !crashed {
		return
	}
	p.stats.Crashes++
	p.logLocked(p.log, slog.LevelWarn, "child exited unexpectedly", "server", inst.def.Name, "key", inst.key.key, "instance", inst.id,
		"pid", g.pid(), "how", g.exitDesc, "stderr", g.tail)
}

// stopInstance drains inst's in-flight calls (bounded by ctx) and stops
// its child. inst has already been removed from the maps.
func (p *Pool) stopInstance(ctx context.Context, inst *instance, why string) {
	p.mu.Lock()
	drained, a := inst.drained, inst.starting
	p.unlock()
	if drained != nil {
		select {
		case <-drained:
		case <-ctx.Done():
		}
	}
	if a != nil {
		select {
		case <-a.done:
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	g := inst.gen
	p.unlock()
	if g != nil {
		p.log.Info("stopping instance", "server", inst.def.Name, "key", inst.key.key, "instance", inst.id, "pid", g.pid(), "why", why)
		g.stop(ctx)
		<-g.dead
	}
	p.mu.Lock()
	p.updateLocked(inst, &event{kind: evStopped, now: p.opts.Now()})
	res := p.releaseLocked(inst)
	p.unlock()
	// After the child has exited: its tmpdir goes, its ports are free.
	p.releaseResources(inst, res)
}

// unbind lets inst's child bind its ports: called just before the exec.
func (p *Pool) unbind(inst *instance) {
	p.mu.Lock()
	res := inst.res
	p.unlock()
	if res != nil {
		res.unbind()
	}
}

// perInstance reports whether inst's spawn spec is made at its first
// start, with its resources: its definition names ${mcpx.tmpdir} or an
// allocation, or it is confined (its private directory is its child's
// HOME).
func (i *instance) perInstance() bool { return perInstance(i.def) || i.sandbox != nil }

// vars are inst's placeholder values known when it is made.
func (i *instance) vars() vars {
	return vars{root: i.root, cwd: i.cwd, instance: i.id, index: i.index, key: i.key.key}
}

func (i *instance) startTimeout(def time.Duration) time.Duration {
	if i.def.StartTimeout > 0 {
		return i.def.StartTimeout
	}
	return def
}

// statusLocked is inst as status shows it at now. A backoff that is over
// shows as stopped: the next call starts a child.
func (i *instance) statusLocked(now time.Time) InstanceStatus {
	s := InstanceStatus{
		ID: i.id, Server: i.def.Name, Key: i.key.key, Root: i.root,
		Cwd: i.spec.cwd, CwdSource: i.spec.cwdSource,
		Transport: transportOf(i.def), Pid: i.gen.pid(), State: i.phase.state(),
		Created: i.created, Started: i.started, LastUsed: i.lastUsed, Calls: i.calls, InFlight: i.inflight,
		Restarts: i.restarts, LastError: i.lastErr, StderrTail: i.lastTail, Degraded: i.degraded, Index: i.index,
	}
	if i.res != nil {
		s.TmpDir = i.res.tmpdir
		for name, h := range i.res.ports {
			if s.Alloc == nil {
				s.Alloc = map[string]int{}
			}
			s.Alloc[name] = h.Port()
		}
	}
	if i.gen != nil && i.gen.sess != nil {
		s.Protocol = i.gen.sess.ProtocolVersion()
	}
	if i.gen != nil {
		s.Program = i.gen.program
	}
	s.Sandbox = i.sandboxStatusLocked()
	s.Exec = i.gen.execValue()
	if i.phase == phaseBackoff {
		if now.Before(i.backoffUntil) {
			s.BackoffUntil = i.backoffUntil
		} else {
			s.State = StateStopped
		}
	}
	return s
}

// probe asks g, whose call just timed out, whether it still answers: a
// ping bounded by Options.ProbeTimeout. No answer means the child is alive
// but silent (stopped, deadlocked): it is marked wedged and killed, its
// in-flight calls fail, and the next call starts a new child. One probe
// per child at a time; it runs in the background, so the timed-out caller
// gets its answer at once.
func (p *Pool) probe(inst *instance, g *generation) {
	p.mu.Lock()
	defer p.unlock()
	detail := fmt.Sprintf("the child was wedged: a call timed out and a ping got no answer within %s, so it was killed; the next call starts a new one", p.opts.ProbeTimeout)
	p.probeLocked(inst, g, p.opts.ProbeTimeout, detail, nil, nil)
}

// probeOnce pings g, bounded by timeout, and kills it as wedged (detail
// says why) if it does not answer; it reports whether it did.
func (p *Pool) probeOnce(inst *instance, g *generation, timeout time.Duration, detail string) bool {
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	err := g.sess.Ping(ctx)
	timedOut := ctx.Err() != nil && p.ctx.Err() == nil
	cancel()
	if err == nil || isRPCError(err) || !timedOut {
		return false // it answered, or it is gone and its watcher has it
	}
	return p.killWedged(inst, g, timeout, detail)
}

// killWedged marks g, inst's child, wedged (detail says why) and kills it;
// false if it is no longer inst's ready child.
func (p *Pool) killWedged(inst *instance, g *generation, timeout time.Duration, detail string) bool {
	p.mu.Lock()
	if inst.phase != phaseReady || inst.gen != g {
		p.unlock()
		return false
	}
	var tail string
	if g.proc != nil {
		tail = g.proc.Tail(20)
	}
	if !p.updateLocked(inst, &event{kind: evWedged, now: p.opts.Now(), gen: g, fail: &failure{detail, tail}}) {
		p.unlock()
		return false
	}
	g.wedged = detail
	p.stats.Wedged++
	p.unlock()
	p.log.Warn("child is wedged; killing it", "server", inst.def.Name, "key", inst.key.key, "instance", inst.id,
		"pid", g.pid(), "probeTimeout", timeout, "stderr", tail)
	if g.proc != nil {
		// SIGKILL ends even a stopped process; the stop that follows
		// (and the watcher's) then finds it gone and clears its group.
		g.proc.Kill()
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 10*time.Second)
	g.stop(stopCtx)
	stopCancel()
	return true
}
