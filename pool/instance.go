package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"mcpx.dev/mcpx/observe/tracing"

	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool/execid"
	"mcpx.dev/mcpx/pool/proc"
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
	dead     chan struct{} // closed by the watcher once the child is gone
	exitDesc string        // set before dead is closed
	tail     string        // set before dead is closed
	wedged   string        // why it was killed as wedged; set under Pool.mu before the kill, read after dead is closed
	probing  atomic.Bool   // a wedge probe is under way
	program  *Program      // what Options.Resolve said of its program; nil = a plain command
	mark     string        // an adapter's: the MarkEnv value of the processes its calls start; constant after start

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

func (p *Pool) startLocked(inst *instance, now time.Time) bool {
	a := &startAttempt{done: make(chan struct{}), parent: inst.traceParent}
	inst.traceParent = trace.SpanContext{}
	ranBefore := !inst.started.IsZero()
	if !p.updateLocked(inst, &event{kind: evStart, now: now, attempt: a}) {
		return false
	}
	if ranBefore {
		p.stats.Restarts++
	}
	p.wg.Go(func() { p.start(inst, a) })
	return true
}

// start spawns the child and runs initialize, bounded by the start timeout
// and the pool's lifetime — never by the caller that triggered it.
func (p *Pool) start(inst *instance, a *startAttempt) {
	t := Target{Server: inst.def.Name, Key: inst.key.key}
	log := p.log.With("server", inst.def.Name, "key", inst.key.key, "instance", inst.id)
	pctx := p.ctx
	if tracing.Enabled() && a.parent.IsValid() {
		var sp trace.Span
		pctx, sp = tracing.Start(trace.ContextWithSpanContext(p.ctx, a.parent), "mcpx.spawn")
		sp.SetAttributes(attribute.String("mcpx.server", inst.def.Name), attribute.String("mcpx.instance", inst.id))
		defer func() {
			if a.err != nil {
				tracing.Fail(sp, a.err)
			}
			sp.End()
		}()
	}
	sp, err := p.prepare(inst)
	if err != nil {
		p.finishStart(inst, a, nil, p.startErr(t, err), log)
		return
	}
	g := &generation{dead: make(chan struct{})}
	// The program first: a nix: spec may build for minutes the first time,
	// which is not the child's start (Options.Resolve).
	if g.program, err = p.resolve(inst, &sp); err != nil {
		p.finishStart(inst, a, nil, p.closing(p.startErr(t, err)), log)
		return
	}
	ctx, cancel := context.WithTimeout(pctx, inst.startTimeout(p.opts.StartTimeout))
	defer cancel()
	tr, e := p.open(ctx, inst, sp, g, log)
	if e != nil {
		p.finishStart(inst, a, nil, e, log)
		return
	}
	g.schemaKey = schemaKey(inst.def, inst.root, inst.spec, g.execValue())
	ictx, isp := ctx, tracing.NoSpan
	if tracing.Enabled() {
		ictx, isp = tracing.StartChild(ctx, "mcpx.initialize", tracing.Client)
	}
	sess, err := p.connect(ictx, tr, inst, g)
	tracing.Fail(isp, err)
	isp.End()
	if err != nil {
		p.initFailed(ctx, inst, a, g, tr, err, log)
		return
	}
	if e := p.awaitReady(ctx, inst, g, t); e != nil {
		sess.Close()
		p.finishStart(inst, a, nil, e, log)
		p.stopGenAsync(g, nil)
		return
	}
	g.sess = sess
	p.schema.update(g.schemaKey, func(e *schemaEntry) {
		e.Server, e.Era, e.Protocol, e.Init = inst.def.Name, sess.Era(), sess.ProtocolVersion(), sess.InitializeResult()
	})
	log.InfoContext(ctx, "spawned", "root", inst.root, "cwd", sp.cwd, "cwdSource", sp.cwdSource,
		"pid", g.pid(), "transport", transportOf(inst.def), "protocol", sess.ProtocolVersion(), "degraded", inst.degraded, "exec", g.execValue())
	p.keepSurvivor(inst, g, log)
	p.finishStart(inst, a, g, nil, log)
	p.saveSurvivorsOf(inst.def, g)
}

// startErr is a start's failure with err as its detail and cause.
func (p *Pool) startErr(t Target, err error) *Error {
	e := p.perr("start", t, ErrStart, err.Error())
	e.Cause = err
	return e
}

// closing makes e say so if the pool is closing: the failure is then the
// pool's doing.
func (p *Pool) closing(e *Error) *Error {
	if p.ctx.Err() != nil {
		e.Err, e.Detail = ErrClosed, "the daemon is shutting down"
	}
	return e
}

// resolve maps a stdio child's command to the program to run
// (Options.Resolve), in sp, and returns what it said of the program (nil
// for a plain command, or when there is nothing to resolve).
func (p *Pool) resolve(inst *instance, sp *spawnSpec) (*Program, error) {
	if inst.def.URL != "" || inst.def.Adapter != nil || p.opts.Resolve == nil {
		return nil, nil
	}
	r, err := p.opts.Resolve(p.ctx, sp.command, inst.def.Environment)
	if err != nil {
		return nil, err
	}
	sp.command, sp.devEnv = r.Path, r.Env
	if r.Spec == "" && r.Environment == "" {
		return nil, nil
	}
	return &r, nil
}

// open makes the transport of g, inst's new generation, within ctx (the
// start timeout): it opens an adapter's namespace, a url server's HTTP
// transport, or spawns a stdio child.
func (p *Pool) open(ctx context.Context, inst *instance, sp spawnSpec, g *generation, log *slog.Logger) (client.Transport, *Error) {
	t := Target{Server: inst.def.Name, Key: inst.key.key}
	switch {
	case inst.def.Adapter != nil:
		p.unbind(inst)
		tr, err := p.openAdapter(ctx, inst, sp, g)
		if err != nil {
			return nil, p.startErr(t, err)
		}
		return tr, nil
	case inst.def.URL != "":
		p.unbind(inst)
		return client.NewHTTP(sp.url, sp.headers, p.opts.HTTPClient), nil
	}
	if e := p.spawn(inst, sp, g, log); e != nil {
		return nil, e
	}
	return client.NewStdio(g.proc.Stdout(), g.proc.Stdin()), nil
}

// spawn starts g's stdio child for inst, as sp says, after taking the
// identity of its executable (package execid).
func (p *Pool) spawn(inst *instance, sp spawnSpec, g *generation, log *slog.Logger) *Error {
	t := Target{Server: inst.def.Name, Key: inst.key.key}
	if err := checkDir(sp); err != nil {
		return p.perr("start", t, ErrStart, err.Error())
	}
	var ready *regexp.Regexp
	if inst.def.ReadyStderr != "" {
		re, err := regexp.Compile(inst.def.ReadyStderr)
		if err != nil {
			return p.perr("start", t, ErrStart, fmt.Sprintf("ready.stderr is not a regular expression: %v", err))
		}
		ready = re
	}
	g.execOpts = execid.Options{Path: childPath(p.opts.Env, sp), Dir: sp.cwd, HashMax: p.opts.ExecHashMax, Args: sp.args}
	id := execid.Of(sp.command, g.execOpts)
	g.exec, g.execStat = &id, id.Stat
	if !id.Missing() {
		sp.path = id.Path // exec what was identified, found on the child's PATH
	}
	cmd := sp.procCommand(p.opts.Env)
	cmd.Log, cmd.Suppressed, cmd.Ready = log, &p.counters.server(inst.def.Name).suppressed, ready
	// The ports are ours up to here; the child binds them next. What is
	// left of the check-then-use gap is the exec and the child's start-up
	// (package portalloc).
	p.unbind(inst)
	c, err := p.spawner.Start(cmd)
	if err != nil {
		e := p.perr("start", t, ErrStart, fmt.Sprintf("cannot run %q: %v; %s", sp.command, err, proc.Hint(sp.command, err)))
		e.Cause = err
		return e
	}
	g.proc = c
	return nil
}

// initFailed finishes a's start of inst, whose initialize over tr failed
// with err within ctx (the start timeout), and stops g, its child.
func (p *Pool) initFailed(ctx context.Context, inst *instance, a *startAttempt, g *generation, tr client.Transport, err error, log *slog.Logger) {
	e := p.closing(p.startErr(Target{Server: inst.def.Name, Key: inst.key.key}, err))
	if e.Err != ErrClosed && ctx.Err() != nil {
		e.Err = ErrStartTimeout
		e.Detail = fmt.Sprintf("no initialize answer within %s; is %q an MCP server speaking JSON-RPC on stdout?", inst.startTimeout(p.opts.StartTimeout), inst.def.Name)
		// The callers waited the whole start timeout already: answer them
		// now, and stop the silent child (stdin, SIGTERM, SIGKILL, seconds
		// each) in the background rather than on their time.
		if g.proc != nil {
			e.StderrTail = g.proc.Tail(20)
		}
		p.finishStart(inst, a, nil, e, log)
		p.stopGenAsync(g, tr.Close)
		return
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 5*time.Second)
	g.stop(stopCtx)
	stopCancel()
	if g.proc != nil {
		e.StderrTail = g.proc.FinalTail()
		if errors.Is(err, client.ErrClosed) && !brokeProtocol(err) {
			e.Err = ErrCrashed
			e.Detail = "the child " + g.proc.ExitDescription() + " during initialize"
		}
	}
	tr.Close()
	p.finishStart(inst, a, nil, e, log)
}

// awaitReady waits, within the start's ctx, for g's stderr to show the
// server's readiness signal (Server.ReadyStderr); nil at once when it has
// none. A child that initialized is not yet ready for a first call when
// it applies its MCP roots asynchronously: only it can say when it has.
func (p *Pool) awaitReady(ctx context.Context, inst *instance, g *generation, t Target) *Error {
	if g.proc == nil || g.proc.Ready() == nil {
		return nil
	}
	select {
	case <-g.proc.Ready():
		return nil
	case <-g.proc.Exited():
		e := p.perr("start", t, ErrCrashed, "the child "+g.proc.ExitDescription()+" before its stderr showed it ready (ready.stderr)")
		e.StderrTail = g.proc.FinalTail()
		return e
	case <-ctx.Done():
		e := p.perr("start", t, ErrStartTimeout, fmt.Sprintf("no line of the child's stderr matched ready.stderr %q within %s; check the pattern against what %q prints (`mcpx status` shows its stderr)",
			inst.def.ReadyStderr, inst.startTimeout(p.opts.StartTimeout), inst.def.Name))
		if p.ctx.Err() != nil {
			e.Err, e.Detail = ErrClosed, "the daemon is shutting down"
		}
		e.StderrTail = g.proc.Tail(20)
		return e
	}
}

// connect runs initialize, returning early if the child dies first.
func (p *Pool) connect(ctx context.Context, tr client.Transport, inst *instance, g *generation) (*client.Session, error) {
	opts, holder := p.sessionOptions(inst, g)
	if g.proc == nil {
		sess, err := client.Connect(ctx, tr, opts)
		holder.set(sess)
		return sess, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-g.proc.Exited():
			cancel(fmt.Errorf("%w: %s", client.ErrClosed, g.proc.ExitDescription()))
			tr.Close()
		case <-ctx.Done():
		}
	}()
	sess, err := client.Connect(ctx, tr, opts)
	holder.set(sess)
	if err != nil && !brokeProtocol(err) {
		// The child's exit is the better explanation, unless it broke the
		// protocol first (its exit is then our doing).
		if cause := context.Cause(ctx); errors.Is(cause, client.ErrClosed) {
			return nil, cause
		}
	}
	return sess, err
}

// sessionOptions are the options of g's session, and the holder its list
// hooks read the session from (set it once the session is made).
func (p *Pool) sessionOptions(inst *instance, g *generation) (client.Options, *sessionHolder) {
	root := inst.root
	if inst.def.NoRoots || inst.def.Adapter != nil {
		root = "" // an adapter has its root in its Scope
	}
	opts := client.Options{Root: root, ClientName: p.opts.ClientName, ClientVersion: p.opts.ClientVersion, Logger: p.log.With("server", inst.def.Name, "key", inst.key.key),
		MaxMessageBytes: p.opts.MaxMessageBytes, RootsMemo: p.rootsMemoFor(inst.def), RootsWait: p.opts.RootsWait,
		Sampling: inst.def.Sampling, CallerRoots: inst.def.CallerRoots, RootsSignalled: inst.def.ReadyStderr != "" && g.proc != nil}
	// The era an earlier child of this effective definition spoke: a
	// handshake-era child is initialized without the probe.
	if e := p.schema.get(g.schemaKey); e != nil {
		opts.Era = e.Era
	}
	if inst.def.Era != "" {
		opts.Era = inst.def.Era
	}
	if inst.def.Adapter != nil {
		opts.Era = client.EraHandshake // adapter.Transport's, with no probe
	}
	holder := new(sessionHolder)
	opts.OnList, opts.OnListChanged = p.listHooks(g.schemaKey, holder)
	if f, server, onList := p.opts.OnTools, inst.def.Name, opts.OnList; f != nil {
		opts.OnList = func(method string, list json.RawMessage) {
			onList(method, list)
			if method == "tools/list" {
				f(server, list)
			}
		}
	}
	if f := p.opts.OnNotify; f != nil {
		server, key := inst.def.Name, inst.key.key
		opts.OnNotify = func(method string, params json.RawMessage) { f(server, key, method, params) }
	}
	return opts, holder
}

// brokeProtocol reports whether err says the child broke the protocol (a
// line that is not JSON, a message over the size limit): its exit, if it
// follows, is then our doing, not the explanation.
func brokeProtocol(err error) bool {
	var pe *client.ProtocolError
	return errors.As(err, &pe) || errors.Is(err, client.ErrMessageTooLarge)
}

func (p *Pool) finishStart(inst *instance, a *startAttempt, g *generation, err *Error, log *slog.Logger) {
	p.mu.Lock()
	defer p.unlock()
	defer close(a.done)
	now := p.opts.Now()
	if err != nil {
		a.err = err
		p.updateLocked(inst, &event{kind: evStartFailed, now: now, attempt: a, fail: &failure{err.Detail, err.StderrTail}})
		p.stats.StartFailures++
		p.logLocked(log, slog.LevelWarn, "start failed", "err", err, "stderr", err.StderrTail)
		if res := p.releaseLocked(inst); res != nil {
			// Its stopper gave up waiting for this start.
			p.wg.Go(func() { p.releaseResources(inst, res) })
		}
		return
	}
	if !p.updateLocked(inst, &event{kind: evStarted, now: now, attempt: a, gen: g}) {
		a.err = p.perr("start", Target{Server: inst.def.Name, Key: inst.key.key}, ErrStart, "internal error: the instance refused its new child")
		p.stopGenAsync(g, nil)
		return
	}
	p.stats.Spawns++
	p.wg.Go(func() { p.watch(inst, g) })
	if inst.phase.removed() {
		// Removed while starting, and its stopper may have given up
		// waiting: nobody else will stop this child.
		p.stopGenAsync(g, nil)
	}
}

// stopGenAsync stops g in the background, bounded, then runs after (if set).
func (p *Pool) stopGenAsync(g *generation, after func() error) {
	p.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		g.stop(ctx)
		if after != nil {
			after()
		}
	})
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
	p.probeLocked(inst, g, p.opts.ProbeTimeout, detail, nil)
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
