package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"mcpx.dev/mcpx/observe/tracing"

	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool/execid"
	"mcpx.dev/mcpx/pool/proc"
)

// Starting an instance: a new generation's program resolved, its
// transport opened (an adapter's namespace, a url server's HTTP, or a
// stdio child spawned through package proc), initialize run, and the
// result applied to the instance (finishStart).

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
	sess, err := p.initialize(ctx, tr, inst, g, "")
	if errors.Is(err, client.ErrProbeUnanswered) && ctx.Err() == nil {
		if g, tr, e = p.reopen(ctx, inst, sp, g, tr, log); e != nil {
			p.finishStart(inst, a, nil, e, log)
			return
		}
		sess, err = p.initialize(ctx, tr, inst, g, client.EraHandshake)
	}
	if err != nil {
		p.initFailed(ctx, inst, a, g, tr, err, log)
		return
	}
	if e := p.awaitReady(ctx, inst, g, t); e != nil {
		sess.Close()
		g.kill()
		p.finishStart(inst, a, nil, e, log)
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

// initialize opens g's session over tr within ctx, traced; era, if set,
// is the era to try first, instead of the one remembered for the
// definition.
func (p *Pool) initialize(ctx context.Context, tr client.Transport, inst *instance, g *generation, era string) (*client.Session, error) {
	ictx, isp := ctx, tracing.NoSpan
	if tracing.Enabled() {
		ictx, isp = tracing.StartChild(ctx, "mcpx.initialize", tracing.Client)
	}
	sess, err := p.connect(ictx, tr, inst, g, era)
	tracing.Fail(isp, err)
	isp.End()
	return sess, err
}

// reopen replaces g, whose child left the server/discover probe
// unanswered (client.ErrProbeUnanswered), with a fresh generation opened
// within the same start (ctx): the caller initializes it with the
// handshake first. The spec has a server silent to the probe legacy
// (2026-07-28, basic/transports/stdio, Backward Compatibility: "does not
// respond within a reasonable timeout"), but the probed child is not sent
// initialize: a dual-era server that is merely slow would answer the probe
// late and refuse it, or serve two eras in one process (client.Connect).
// So it is killed, its callers still waiting, and a fresh child that has
// seen no probe is initialized; the era it speaks is remembered for the
// definition as any child's is, so later starts skip the probe.
func (p *Pool) reopen(ctx context.Context, inst *instance, sp spawnSpec, g *generation, tr client.Transport, log *slog.Logger) (*generation, client.Transport, *Error) {
	log.InfoContext(ctx, "no answer to the server/discover probe; replacing the child with a fresh one opened with initialize",
		"pid", g.pid(), "wait", client.DefaultProbeWait)
	g.kill()
	tr.Close()
	fresh := &generation{dead: make(chan struct{}), program: g.program}
	tr, e := p.open(ctx, inst, sp, fresh, log)
	if e != nil {
		return nil, nil, e
	}
	fresh.schemaKey = schemaKey(inst.def, inst.root, inst.spec, fresh.execValue())
	return fresh, tr, nil
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
	r, err := p.opts.Resolve(p.ctx, sp.command, inst.def.Environment, sp.cwd)
	if err != nil {
		return nil, err
	}
	sp.command, sp.devEnv, sp.wrap, sp.isolated = r.Path, r.Env, r.Wrap, r.Isolated
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
		return client.NewHTTP(sp.url, sp.headers, p.urlClient(inst.def.Name, inst.key.account)), nil
	}
	if e := p.spawn(ctx, inst, sp, g, log); e != nil {
		return nil, e
	}
	return client.NewStdio(g.proc.Stdout(), g.proc.Stdin()), nil
}

// urlClient is the HTTP client of the url server named server for
// account: the pool's, its transport wrapped by Options.URLTransport.
func (p *Pool) urlClient(server, account string) *http.Client {
	if p.opts.URLTransport == nil {
		return p.opts.HTTPClient
	}
	rt := p.opts.URLTransport(server, account, p.opts.HTTPClient.Transport)
	if rt == nil {
		return p.opts.HTTPClient
	}
	c := *p.opts.HTTPClient
	c.Transport = rt
	return &c
}

// spawn starts g's stdio child for inst, as sp says, after taking the
// identity of its executable (package execid); a confined instance's
// child starts confined (sandbox.go), within ctx.
func (p *Pool) spawn(ctx context.Context, inst *instance, sp spawnSpec, g *generation, log *slog.Logger) *Error {
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
	if inst.sandbox != nil {
		if err := p.confineCommand(ctx, inst, sp, g.program, &cmd); err != nil {
			e := p.perr("start", t, ErrStart, err.Error())
			e.Cause = err
			return e
		}
	}
	// The ports are ours up to here; the child binds them next. What is
	// left of the check-then-use gap is the exec and the child's start-up
	// (package portalloc).
	p.unbind(inst)
	c, err := p.spawner.Start(ctx, cmd)
	if err != nil && cmd.Sandbox != nil {
		e := p.perr("start", t, ErrStart, sandboxErr(inst.def.Name, err))
		e.Cause = err
		return e
	}
	if err != nil {
		e := p.perr("start", t, ErrStart, fmt.Sprintf("cannot run %q: %v; %s", sp.command, err, proc.Hint(sp.command, err)))
		e.Cause = err
		return e
	}
	g.proc = c
	p.serveEgress(inst, g, log)
	return nil
}

// initFailed finishes a's start of inst, whose initialize over tr failed
// with err within ctx (the start timeout), and stops g, its child, before
// its callers have the error: a failed start leaves no child behind.
func (p *Pool) initFailed(ctx context.Context, inst *instance, a *startAttempt, g *generation, tr client.Transport, err error, log *slog.Logger) {
	e := p.closing(p.startErr(Target{Server: inst.def.Name, Key: inst.key.key}, err))
	if e.Err != ErrClosed && ctx.Err() != nil {
		e.Err = ErrStartTimeout
		e.Detail = fmt.Sprintf("no initialize answer within %s; is %q an MCP server speaking JSON-RPC on stdout?", inst.startTimeout(p.opts.StartTimeout), inst.def.Name)
		// The callers waited the whole start timeout already: the
		// silent child is killed, not stopped through the stdin and
		// SIGTERM graces (seconds each) on their time.
		g.kill()
		if g.proc != nil {
			e.StderrTail = g.proc.FinalTail()
		}
		tr.Close()
		p.finishStart(inst, a, nil, e, log)
		return
	}
	if brokeProtocol(err) {
		// Nothing it says can be read any more (a line that is not
		// JSON, one over the size limit that may never end): no
		// session to end gracefully.
		g.kill()
	} else {
		stopCtx, stopCancel := context.WithTimeout(context.Background(), 5*time.Second)
		g.stop(stopCtx)
		stopCancel()
	}
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

// kill ends g's child at once (SIGKILL, no stdin or SIGTERM grace) and
// waits for it, then stops what it left as g.stop does: for a start that
// failed, whose callers must not have their error while the child still
// runs (nor wait the graces of one that ignores its stdin's end).
func (g *generation) kill() {
	if g.proc != nil {
		// Before g.stop closes its stdin: killed first, the child never
		// sees the end of its input.
		g.proc.Kill()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace
	g.stop(ctx)
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

// connect runs initialize, returning early if the child dies first; era,
// if set, overrides the remembered one (sessionOptions).
func (p *Pool) connect(ctx context.Context, tr client.Transport, inst *instance, g *generation, era string) (*client.Session, error) {
	opts, holder := p.sessionOptions(inst, g)
	if era != "" {
		opts.Era = era
	}
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
