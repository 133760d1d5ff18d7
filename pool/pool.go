// Package pool keeps pooled child MCP servers keyed by (server, scope key).
//
//	p := pool.New(pool.Options{Logger: log})
//	p.SetServers([]pool.Server{{Name: "demo", Command: "mcpx", Args: []string{"demo-server"}}})
//	err := p.Do(ctx, pool.Target{Server: "demo", Key: "worktree:/src/app", Root: "/src/app"},
//		func(s *client.Session) error { _, err := s.CallTool(ctx, "echo", args, nil); return err })
//	defer p.Close(ctx)
//
// A child never hangs off a request context: it lives on the pool's context,
// and a request context bounds only its own call. Instances are created on
// first use, fixed to the root they were created with (restarts reuse it),
// reaped when idle, and restarted after a crash on the next call, with
// exponential backoff when they keep failing with no good call between.
// At the caps, the instance idle the longest makes room; when every
// instance is busy, callers that need a new one wait in line (oldest
// first) for one to become idle. A call that times out has its child
// pinged; a child that does not answer is wedged, and is killed.
//
// A stdio child is replaced exactly when what it runs changes: its
// executable's identity (package execid) is taken at start and checked on
// a tick and on CheckExec; a changed one drains the instance and starts a
// replacement under the same key. Every lifecycle change is an Event in the
// pool's EventLog (Events), emitted from the one place instances change.
package pool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/portalloc"
	"mcpx.dev/mcpx/pool/proc"
	"mcpx.dev/mcpx/pool/proc/egress"
)

// Server is the definition of one child server, as the pool needs it.
// String fields may hold the ${mcpx.*} placeholders (package placeholder);
// they are substituted per instance: when it is made, or at its first start
// when they include ${mcpx.tmpdir} or an allocation.
type Server struct {
	Name    string
	Command string // stdio child; exactly one of Command, URL and Adapter is set
	Args    []string
	Env     map[string]string // set over what the child inherits
	Cwd     string            // "" = the instance root, else the daemon's cwd
	URL     string            // streamable-HTTP child
	Headers map[string]string
	// Adapter is a namespace that is not a child (package adapter), run
	// in a child's place (adapter.go): Cwd, Env and InheritEnv make its
	// scope's directory and environment; its Identity takes part in
	// change detection and the schema cache.
	Adapter adapter.Opener `json:"-"`

	Exclusive    bool          // one caller at a time per instance
	Max          int           // instances of this server; 0 = DefaultMax
	IdleTimeout  time.Duration // 0 = Options.IdleTimeout
	StartTimeout time.Duration // spawn + initialize; 0 = Options.StartTimeout

	// InheritEnv names the daemon's variables a stdio child gets beyond the
	// allowlist (HOME, PATH, the locale, ...: see proc.Environ); with
	// InheritAllEnv it gets the daemon's whole environment. Env is set
	// over either.
	InheritEnv    []string
	InheritAllEnv bool

	// Allocate are the server's per-instance allocations by name, which
	// ${mcpx.alloc.NAME} stands for (see Alloc).
	Allocate map[string]Alloc
	// Sampling declares the sampling capability to the children
	// (client.Options.Sampling).
	Sampling bool
	// CallerRoots answers a child's in-call roots/list through the call's
	// input handler (client.Options.CallerRoots).
	CallerRoots bool
	// Era pins the protocol era of the children (client.EraHandshake
	// or client.EraStateless); "" = the one an earlier child of the
	// definition spoke, else the probe's.
	Era string
	// ReadyStderr, a regular expression the owner has checked, holds a
	// stdio child's start until a line of its stderr matches, after
	// initialize, bounded by the start timeout; "" = ready once
	// initialized. For servers that apply MCP roots asynchronously.
	ReadyStderr string
	// NoRoots: the children are never offered the instance root as MCP
	// roots (the config's "roots": false); the root still sets their cwd
	// and ${mcpx.root}.
	NoRoots bool
	// Health, Min, Warm and Keys keep the children alive and warm
	// (health.go): an idle child is pinged every HealthInterval (0 =
	// never) and replaced when no answer comes within HealthTimeout; Min
	// instances are kept running for Keys and the last keys used; Warm
	// starts one for each of Keys at SetServers to fill the schema cache.
	// Keys are the targets known before any call (a global server's).
	// A change of these alone replaces no instance.
	HealthInterval, HealthTimeout time.Duration `json:"-"`
	// HealthURL, on a url server with a HealthInterval, is fetched (GET,
	// with no headers and no sign-in) at each health check after the
	// ping; an answer other than HealthExpect (0 = 200), or none within
	// HealthTimeout, fails the check as an unanswered ping does.
	HealthURL    string   `json:"-"`
	HealthExpect int      `json:"-"`
	Min          int      `json:"-"`
	Warm         bool     `json:"-"`
	Keys         []Target `json:"-"`

	// Revision is opaque to the pool. Its owner bumps it when what the
	// definition runs changed while the definition did not (a nix: command
	// refreshed to a new store path): like any change of the definition,
	// it drains and replaces the running instances. It is no part of the
	// definition's memo fingerprint.
	Revision int `json:"-"`
	// Environment is opaque to the pool: it is handed to Options.Resolve,
	// which may turn it into variables for the child (an execution
	// environment), and a change replaces the instances.
	Environment string `json:"-"`
	// Confine is opaque to the pool: the server's sandbox setting as its
	// owner reads it (whose Specs the callers' Targets carry). Like any
	// change of the definition, a change replaces the instances, and an
	// instance handed over under another one is not adopted. It is no
	// part of the memo fingerprint.
	Confine string `json:"-"`
}

// Options configure a Pool. The zero value is usable.
type Options struct {
	MaxInstances int           // daemon-wide cap; 0 = DefaultMaxInstances
	IdleTimeout  time.Duration // 0 = DefaultIdleTimeout
	ReapInterval time.Duration // 0 = DefaultReapInterval; negative = no background reaper (call Reap)
	StartTimeout time.Duration // 0 = DefaultStartTimeout
	// WaitTimeout bounds how long a call that needs a new instance waits in
	// line while the caps are reached and every instance is busy; 0 =
	// DefaultWaitTimeout. The call's own deadline bounds it too.
	WaitTimeout time.Duration
	// ProbeTimeout is how long a child whose call timed out has to answer
	// a ping before it is declared wedged and killed; 0 = DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// KeyAlive, if set, is asked on each reap whether a caller-owned key
	// (pid:, lease:) still has its owner; false stops the instance at once.
	KeyAlive func(key string) bool
	// KeyIdleTimeout, if set, is asked on each reap for a key's own idle
	// timeout (a named session's); 0 = the server's, else IdleTimeout.
	// Like KeyAlive it is called with the pool's lock held: it must not
	// call the pool.
	KeyIdleTimeout func(key string) time.Duration
	Env            []string         // what children inherit from (allowlisted); nil = os.Environ()
	Logger         *slog.Logger     // nil = discard
	Now            func() time.Time // nil = time.Now; tests inject a clock
	// ClientName and ClientVersion go into initialize's clientInfo.
	ClientName, ClientVersion string
	HTTPClient                *http.Client // for url servers; nil = a default client
	// URLTransport, if set, wraps HTTPClient's transport (base; nil =
	// http.DefaultTransport) for each url server, by name: the broker's
	// OAuth client authorizes the server's requests there (package
	// mcp/oauth), with the sign-in of the instance's account
	// (Target.Account). nil, or a nil answer, = HTTPClient as it is.
	URLTransport func(server, account string, base http.RoundTripper) http.RoundTripper
	// MaxMessageBytes bounds one message from a child; 0 =
	// DefaultMaxMessageBytes. A larger answer fails its call.
	MaxMessageBytes int
	// RootsWait bounds how long a new child with a root is given to ask
	// roots/list after initialize (learned per server definition: children
	// that never ask are not waited for again); 0 = client.DefaultRootsWait,
	// negative = no wait.
	RootsWait time.Duration
	// MemoFile, if set, keeps what the pool learns about each server
	// definition's children (whether they ask roots/list at start-up)
	// across restarts, so a server that never asks costs the RootsWait
	// once per definition, not once per daemon start. "" = in memory only.
	MemoFile string
	// SchemaCacheFile, if set, keeps each effective definition's era,
	// initialize answer and lists across restarts (schemacache.go): a
	// restarted daemon opens children straight with their era, and
	// ToolListing answers without a child. "" = in memory only.
	SchemaCacheFile string
	// Survive: stdio children outlive a killed daemon, their pipes held
	// by the watchdog, and the next daemon's pool adopts them
	// (AdoptSurvivors; survive.go). SurviveFile is where what it needs is
	// kept. Needs a watchdog (Linux, proc.MaybeWatch).
	Survive     bool
	SurviveFile string
	// Resolve, if set, maps a stdio child's command (after substitution)
	// to the program to exec, at each spawn, in the spawning goroutine:
	// only the instance being started waits for it, and its callers wait
	// no longer than their own deadlines. The broker resolves nix:
	// program specs here (the pool knows nothing of nix); a plain command
	// is returned as it is. An error fails that start (ErrStart, the
	// error's text as the detail) and counts towards its backoff. It runs
	// before the start timeout begins, bounded only by the pool's
	// lifetime and its own bounds. nil = commands are run as written.
	// environment is the server's Environment, which the hook may turn
	// into variables (Program.Env); dir is the child's working directory
	// ("" = the daemon's), where an environment such as "auto" is looked
	// for.
	Resolve func(ctx context.Context, command, environment, dir string) (Program, error)
	// ExecHashMax is the largest executable whose content is hashed for
	// its identity (package execid); larger ones are identified by their
	// stat. 0 = execid.DefaultHashMax.
	ExecHashMax int64
	// ExecWatch is how often each running stdio child's executable is
	// stat'ed; one whose identity changed is drained and replaced (see
	// CheckExec). 0 = DefaultExecWatch; negative = no watch (CheckExec
	// still works).
	ExecWatch time.Duration
	// TmpDir is where instances' private directories (${mcpx.tmpdir}) are
	// made, in a run-<pid>-* directory per pool that Close removes, with
	// those of a predecessor whose instances it adopted; "" = a new
	// directory under os.TempDir().
	TmpDir string
	// OnNotify, if set, is told every notification a child sends but
	// progress (client.Options.OnNotify), with the instance's server and
	// scope key. It runs on the child's reader: it must not block or call
	// the pool.
	OnNotify func(server, key, method string, params json.RawMessage)
	// OnTools, if set, is told each tools/list a child gave (all pages
	// joined; after a start, a list_changed, a restart), with its server:
	// the broker's tool pins (broker/pins.go). It runs on the goroutine
	// that listed (a call's, or the refresh after a list_changed), never
	// under the pool's lock; it must not call the pool. The list is to be
	// read only.
	OnTools func(server string, tools json.RawMessage)
	// Events receives the pool's lifecycle events; nil = a log of
	// DefaultEventBuffer events, made by New (see Events).
	Events *EventLog
	// Egress configures the egress proxy that serves confined children
	// whose sandbox lists hosts (sandbox.go); its Logger defaults to the
	// pool's. The zero value is the daemon's: the system's resolver, no
	// private address reached.
	Egress egress.Options
	// Closure, if set, names the store paths a nix program needs to read
	// (its store closure) when it runs confined; nil = its store path
	// alone.
	Closure func(ctx context.Context, storePath string) ([]string, error)
}

// MarkEnv is the variable that marks every process a pool's child starts
// (proc.MarkEnv): what the stop of a child, and a daemon's watchdog, kill
// by.
const MarkEnv = proc.MarkEnv

// Target says which instance a call wants.
type Target struct {
	Server    string
	Key       string // scope key, e.g. "worktree:/src/app"
	Root      string // the instance root; fixed when the instance is created
	Cwd       string // the caller's canonical cwd, for ${mcpx.cwd}
	Degraded  string // why the key is not the requested scope, for status
	Ephemeral bool   // stop the instance right after this call (call: keys)
	// Sandbox, if set, confines the instance's stdio child (sandbox.go):
	// its Fingerprint is part of the instance's identity, so a caller
	// confined otherwise never shares a child. nil = unconfined.
	Sandbox *confine.Spec
	// Account, for a url server, names whose sign-in its requests carry
	// (Options.URLTransport's account): part of the instance's identity,
	// so callers signed in apart never share an upstream session. "" =
	// the server's own.
	Account string
}

// Pool errors; a *Error wraps one of these.
var (
	ErrUnknownServer = errors.New("unknown server")
	ErrExhausted     = errors.New("instance limit reached")
	ErrBackoff       = errors.New("server is failing; waiting before the next start")
	ErrCrashed       = errors.New("child exited")
	ErrStart         = errors.New("child failed to start")
	ErrStartTimeout  = errors.New("child did not finish initialize in time")
	ErrSpawnConfig   = errors.New("cannot build the child's command line")
	ErrTimeout       = errors.New("timed out")
	ErrCanceled      = errors.New("caller went away")
	ErrClosed        = errors.New("pool is shut down")
	ErrNotFound      = errors.New("no such instance")
)

// Error is what the pool returns: Err is one of the sentinels above (test
// with errors.Is), Detail says what happened in words safe to show the
// daemon's owner.
type Error struct {
	Op         string // "start", "call", "acquire", "stop"
	Server     string
	Key        string
	Err        error
	Detail     string
	StderrTail string        // the child's last stderr lines, when it died
	RetryAfter time.Duration // for ErrExhausted and ErrBackoff
	Cause      error         // underlying error, if any (logged, not shown)
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s %s (%s): %v", e.Op, e.Server, e.Key, e.Err)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

// instKey names an instance: its server, its scope key, its sandbox
// Spec's fingerprint ("" unconfined: the key as it always was) and its
// account (Target.Account).
type instKey struct{ server, key, sandbox, account string }

// Pool is safe for concurrent use.
type Pool struct {
	opts    Options
	log     *slog.Logger
	ctx     context.Context // children's lifetime; cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // every goroutine the pool starts
	spawner *proc.Spawner  // every child is started from its thread
	egress  *egress.Proxy  // serves confined children's egress; constant after New
	events  *EventLog      // lifecycle events; constant after New
	execMu  sync.Mutex     // serializes exec checks (CheckExec); guards generation.execStat, execMissing
	surv    survive        // the survive file's writer (survive.go)

	mu        sync.Mutex
	servers   map[string]*Server    // guarded by mu
	instances map[instKey]*instance // guarded by mu
	byID      map[string]*instance  // guarded by mu
	seq       map[string]int        // guarded by mu; per-server instance numbers
	closed    bool                  // guarded by mu
	queue     []*slotWaiter         // guarded by mu; callers waiting for room for a new instance, oldest first
	stats     Stats                 // guarded by mu
	logs      []logRecord           // guarded by mu; emitted by unlock (locklog.go)
	counters  counters              // per server, for metrics; has its own lock

	ports   *portalloc.Allocator         // ${mcpx.alloc.*} ports of every server; constant after New
	indexes map[string]map[int]*instance // guarded by mu; ${mcpx.index} of live instances by server

	tmpMu   sync.Mutex
	tmpRun  string          // guarded by tmpMu; this pool's directory of private directories, "" = not made
	tmpKept map[string]bool // guarded by tmpMu; predecessors' such directories holding adopted instances' (keepRuns)

	memoMu sync.Mutex
	memos  map[string]rootsMemo // guarded by memoMu; by server name
	learnt *memoFile            // what earlier runs learned; constant after New
	schema *schemaCache         // eras and lists per effective definition; constant after New
	keep   keeper               // the last keys used, for Server.Min (health.go); has its own lock
}

// slotWaiter is a caller in line for room for a new instance. Whoever
// serves it (serveQueueLocked, Close) removes it from the queue, sets inst
// or err, then closes ready.
type slotWaiter struct {
	t     Target
	ready chan struct{}
	inst  *instance // made for it, with waiting counted for it
	err   error
}

// New returns a pool with no servers. It starts the idle reaper; Close stops it.
func New(opts Options) *Pool {
	if opts.MaxInstances <= 0 {
		opts.MaxInstances = DefaultMaxInstances
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.ReapInterval == 0 {
		opts.ReapInterval = DefaultReapInterval
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = DefaultWaitTimeout
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = DefaultProbeTimeout
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.ExecWatch == 0 {
		opts.ExecWatch = DefaultExecWatch
	}
	if opts.Events == nil {
		opts.Events = NewEventLog(DefaultEventBuffer)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if opts.Egress.Logger == nil {
		opts.Egress.Logger = log.With("component", "egress")
	}
	p := &Pool{
		opts: opts, log: log, ctx: ctx, cancel: cancel,
		spawner:   proc.NewSpawner(),
		egress:    egress.New(opts.Egress),
		events:    opts.Events,
		servers:   map[string]*Server{},
		instances: map[instKey]*instance{},
		byID:      map[string]*instance{},
		seq:       map[string]int{},
		ports:     portalloc.New(),
		indexes:   map[string]map[int]*instance{},
		learnt:    loadMemoFile(opts.MemoFile, log),
		schema:    loadSchemaCache(opts.SchemaCacheFile, log, opts.Now),
	}
	p.wg.Go(func() { p.schema.run(ctx) })
	if opts.ReapInterval > 0 {
		p.wg.Add(1)
		go p.reapLoop(opts.ReapInterval)
	}
	if opts.ExecWatch > 0 {
		p.wg.Add(1)
		go p.execLoop(opts.ExecWatch)
	}
	p.wg.Go(p.healthLoop)
	return p
}

// Events returns the log of the pool's lifecycle events.
func (p *Pool) Events() *EventLog { return p.events }

// SetServers replaces the server definitions. Instances of removed or
// changed servers are drained and stopped in the background; instances of
// unchanged servers keep running.
func (p *Pool) SetServers(defs []Server) {
	next := make(map[string]*Server, len(defs))
	for i := range defs {
		d := defs[i]
		next[d.Name] = &d
	}
	p.mu.Lock()
	var stale []*instance
	for k, inst := range p.instances {
		if nd, ok := next[k.server]; !ok || !sameLife(nd, inst.def) {
			stale = append(stale, inst)
			p.removeLocked(inst, EventRestart, "definition changed")
		}
	}
	p.servers = next
	for _, inst := range stale {
		p.logLocked(p.log, slog.LevelInfo, "server definition changed; replacing instance", "server", inst.def.Name, "key", inst.key.key, "instance", inst.id)
		p.stopAsync(inst, "definition changed")
	}
	p.kickLocked()
	p.warmLocked(defs)
	p.unlock()
}

// Do runs fn with a ready session of the instance for t, creating or
// restarting it as needed. ctx bounds the wait for the instance and fn's
// call, never the child. Errors are *Error, or what fn returned. A call
// that ends past a deadline, the caller's or one fn set itself (the
// broker's callTimeout), gets its child pinged: a child that does not
// answer is killed as wedged, and the next call starts a new one.
func (p *Pool) Do(ctx context.Context, t Target, fn func(*client.Session) error) error {
	p.keep.used(t)
	for attempt := 0; ; attempt++ {
		inst, g, err := p.acquireTraced(ctx, t)
		if err != nil {
			return err
		}
		err = p.run(ctx, inst, g, t, fn)
		// A streamable-HTTP child that expired our session and refused
		// this very request never saw it: re-initialize, send it again,
		// once. Calls it had already accepted are not repeated.
		if attempt == 0 && errors.Is(err, client.ErrNotDelivered) {
			continue
		}
		return err
	}
}

// run calls fn and releases the instance however fn ends, a panic
// included, so a bad handler cannot pin an instance or its exclusive token.
func (p *Pool) run(ctx context.Context, inst *instance, g *generation, t Target, fn func(*client.Session) error) error {
	released := false
	defer func() {
		if !released {
			p.release(ctx, inst, g, t, errPanicked)
		}
	}()
	err := fn(g.sess)
	released = true
	return p.release(ctx, inst, g, t, err)
}

var errPanicked = errors.New("call panicked")

func (p *Pool) perr(op string, t Target, sentinel error, detail string) *Error {
	return &Error{Op: op, Server: t.Server, Key: t.Key, Err: sentinel, Detail: detail}
}

// removeLocked takes inst out of the maps; new callers get a new instance.
// The caller then owns stopping it (stopInstance, or stopAsync).
// why is kept for the exit event; notice, if set, announces the removal.
func (p *Pool) removeLocked(inst *instance, notice EventKind, why string) {
	p.removeEvLocked(inst, &event{notice: notice, reason: why})
}

func (p *Pool) removeEvLocked(inst *instance, ev *event) {
	if p.instances[inst.key] == inst {
		delete(p.instances, inst.key)
	}
	delete(p.byID, inst.id)
	ev.kind, ev.now = evRemove, p.opts.Now()
	p.updateLocked(inst, ev)
}

func (p *Pool) release(ctx context.Context, inst *instance, g *generation, t Target, callErr error) error {
	if callErr != nil && !isRPCError(callErr) {
		callErr = p.callError(ctx, inst, g, t, callErr)
	}
	p.mu.Lock()
	p.updateLocked(inst, &event{kind: evRelease, now: p.opts.Now(), ok: callErr == nil || isRPCError(callErr)})
	if inst.sem != nil {
		<-inst.sem
	}
	if t.Ephemeral && inst.inflight == 0 && !inst.phase.removed() {
		p.removeLocked(inst, "", "call finished")
		p.stopAsync(inst, "call finished")
	}
	if inst.inflight == 0 {
		p.kickLocked()
	}
	p.unlock()
	return callErr
}

func isRPCError(err error) bool {
	var re *jsonrpc.Error
	return errors.As(err, &re)
}

// callError turns a failed call into a pool error: a dead child becomes
// ErrCrashed with its exit status and stderr tail.
func (p *Pool) callError(ctx context.Context, inst *instance, g *generation, t Target, err error) error {
	switch {
	case errors.Is(err, client.ErrSessionExpired):
		// The call failed on send; let the watcher retire this session
		// before Do retries, so the retry gets a fresh one.
		select {
		case <-g.dead:
		case <-time.After(2 * time.Second):
		}
		return err
	case errors.Is(ctx.Err(), context.Canceled):
		e := p.perr("call", t, ErrCanceled, "the caller went away; the child was sent notifications/cancelled")
		e.Cause = err
		return e
	case ctx.Err() != nil:
		e := p.perr("call", t, ErrTimeout, "the call did not finish before its deadline; the child was sent notifications/cancelled")
		e.Cause = err
		p.probe(inst, g)
		return e
	case errors.Is(err, context.DeadlineExceeded):
		// A deadline of fn's own ran out while the caller's did not: the
		// broker bounds each call by the server's callTimeout inside fn.
		// That silence is as suspect as the caller's deadline: probe.
		p.probe(inst, g)
		return err
	case errors.Is(err, client.ErrClosed):
		p.mu.Lock()
		stopping := inst.phase.removed()
		p.unlock()
		if stopping {
			e := p.perr("call", t, ErrClosed, "the instance was stopped (by request, a config reload, eviction or shutdown) before the call finished")
			e.Cause = err
			e.RetryAfter = time.Second
			return e
		}
		// Give the watcher a moment to reap the child and collect stderr;
		// its findings may be read only once dead is closed.
		e := p.perr("call", t, ErrCrashed, "the child's session ended")
		e.Cause = err
		select {
		case <-g.dead:
			e.Detail, e.StderrTail = g.deathDetail(), g.tail
		case <-time.After(2 * time.Second):
		}
		return e
	}
	return err
}

// Instances returns a snapshot of every instance, sorted by server then key.
func (p *Pool) Instances() []InstanceStatus {
	now := p.opts.Now()
	p.mu.Lock()
	out := make([]InstanceStatus, 0, len(p.instances))
	for _, inst := range p.instances {
		out = append(out, inst.statusLocked(now))
	}
	p.unlock()
	slices.SortFunc(out, func(a, b InstanceStatus) int {
		return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.Key, b.Key))
	})
	return out
}

// Stats returns the pool-wide counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.unlock()
	s := p.stats
	s.Queued = int64(len(p.queue))
	return s
}

// Stop drains and stops one instance by ID. ctx bounds the drain; when it
// ends, in-flight calls are cut off.
func (p *Pool) Stop(ctx context.Context, id string) error {
	p.mu.Lock()
	inst := p.byID[id]
	if inst == nil {
		p.unlock()
		return &Error{Op: "stop", Key: id, Err: ErrNotFound, Detail: fmt.Sprintf("no instance %q; `mcpx status` lists them", id)}
	}
	p.removeLocked(inst, "", "stopped by request")
	p.kickLocked()
	p.unlock()
	p.keep.forget(inst.key)
	p.log.Info("stopping instance by request", "server", inst.def.Name, "key", inst.key.key, "instance", inst.id)
	p.stopInstance(ctx, inst, "stopped by request")
	return nil
}

// Close stops the pool: no new calls, in-flight calls drain until ctx ends,
// then every child is stopped. It returns when every goroutine and child
// the pool started is gone, with nil. Close may be called again (the
// broker's forced stop closes the pool before the broker's Close does): a
// later Close finds nothing to stop and returns nil too; calls are refused
// with ErrClosed from the first.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.kickLocked()
	var all []*instance
	for _, inst := range p.instances {
		all = append(all, inst)
		p.removeLocked(inst, "", "daemon shutting down")
	}
	p.unlock()
	var wg sync.WaitGroup
	for _, inst := range all {
		wg.Go(func() { p.stopInstance(ctx, inst, "daemon shutting down") })
	}
	wg.Wait()
	p.cancel()
	p.wg.Wait()
	p.egress.Close()
	p.spawner.Close()
	p.removeTmpBase()
	return nil
}

func (p *Pool) stopAsync(inst *instance, why string) {
	// Callers hold p.mu, so Close (which sets closed under p.mu before it
	// waits) never waits on a WaitGroup that is still being added to.
	p.wg.Go(func() {
		ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
		defer cancel()
		p.stopInstance(ctx, inst, why)
	})
}

// InstanceOf names the instance whose current child sess is a session to
// ("" if none is): what a call inside Do ran on.
func (p *Pool) InstanceOf(sess *client.Session) string {
	p.mu.Lock()
	defer p.unlock()
	for _, inst := range p.instances {
		if inst.gen != nil && inst.gen.sess == sess {
			return inst.id
		}
	}
	return ""
}
