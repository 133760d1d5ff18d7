// Package broker is mcpx's domain: it maps a caller's declared context to a
// scope key and root, and forwards calls to the pooled child for that key.
//
//	cfg, err := config.Load(path) // package mcpx.dev/mcpx/config
//	b, err := broker.New(broker.Options{Config: cfg, Logger: log})
//	res, err := b.CallTool(ctx, broker.Request{Caller: c, Context: cc, Server: "demo"}, "echo", args, nil)
//	defer b.Close(ctx)
//
// Sessions (Sessions, SetSession, StopSession) are the instances sharing a
// caller-owned key; leases (AcquireLease, RenewLease, ReleaseLease) give
// callers with no watchable pid the pid scope's lifetime; a server's
// scopePolicy decides whether a caller's CallContext.Scope may replace its
// configured scope. See "Scope policy" and "Sessions and leases" in
// docs/scopes.md.
//
// A caller is served the servers of its config chain (package
// mcpx.dev/mcpx/config/chain): the project files found upward from its cwd
// merged over the owner's config, for the owner and, in its roots, a rule
// of a caller's rights that says projectConfig (rights.Rights.ProjectConfig);
// everyone else gets the owner's config (ServersAt,
// ConfigSources; docs/project-config.md). Only servers
// merge: the pool, limits, nix and records sections are the daemon's own.
//
// It knows nothing of HTTP: the api package translates requests into
// Requests and *Error kinds into status codes.
package broker

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"mcpx.dev/mcpx/mcp/oauth"
	"net/http"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/config/chain"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/observe/calllog"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/proc/egress"
)

// Options configures a Broker.
type Options struct {
	Config  *config.Config // required
	Logger  *slog.Logger   // nil = discard
	Version string         // reported to children as clientInfo.version; "" = "dev"
	// Pool overrides for tests; zero fields come from Config.Pool.
	Now          func() time.Time
	ReapInterval time.Duration // negative: no background reaper
	Env          []string      // children's base environment; nil = os.Environ()
	// StateDir, if set, is where the pool keeps what it learns about
	// servers across restarts (MemoFile), where instances' private
	// directories are made (TmpDir) and where the call log goes
	// (RecordsDir, per the config's records section); "" = nothing kept.
	StateDir string
	// ExecWatch overrides the config's pool.execWatch (tests); negative = off.
	ExecWatch time.Duration
	// Nix resolves servers' nix:<flakeref>#attr commands to store paths
	// (package nixresolve), at spawn; the caller owns it and closes it
	// after the broker. nil = a nix: command fails its server's start,
	// saying the daemon has no resolver; plain commands are unaffected.
	Nix *nixresolve.Resolver
	// Chain says where callers' config chains are looked for besides their
	// cwd's ancestors (package chain): the user's and the system's config
	// directories and the override and fallback paths, and ceilings beside
	// the config's ceilingDirs. The zero value: project directories only.
	// See docs/project-config.md.
	Chain chain.Options
	// TaskRetention bounds how long a finished task (and its result) is
	// kept for its caller; the child's ttl, if shorter, wins. 0 =
	// DefaultTaskRetention.
	TaskRetention time.Duration
	// Egress configures the egress proxy of confined children whose
	// sandbox lists hosts (pool.Options.Egress); the zero value is the
	// daemon's. Tests give a resolver that maps names to test hosts.
	Egress egress.Options
}

// MemoFile is the name of the pool's memo file in the state directory.
const MemoFile = "pool-memo.json"

// SchemaCacheFile is the name of the pool's schema cache (eras and lists
// per effective definition) in the state directory.
const SchemaCacheFile = "schema-cache.json"

// SurviveFile is the name of the pool's record of the children that
// outlive a killed daemon (pool.Options.Survive).
const SurviveFile = "survive.json"

// RecordsDir is the call log's directory in the state directory.
const RecordsDir = "records"

// TmpDir is where instances' ${mcpx.tmpdir} directories are made, in the
// state directory.
const TmpDir = "instances"

// tmpDir is TmpDir in stateDir; "" (no state directory) = the pool makes
// one under the system's temporary directory.
func tmpDir(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Join(stateDir, TmpDir)
}

func memoFile(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Join(stateDir, MemoFile)
}

// stateFile is name in stateDir; "" without a state directory.
func stateFile(stateDir, name string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Join(stateDir, name)
}

// Broker maps callers to scoped instances and forwards their calls.
// All methods are safe for concurrent use.
type Broker struct {
	log   *slog.Logger
	scope *Resolver
	pool  *pool.Pool

	nix      *nixresolve.Resolver // nil: nix: commands fail
	stateDir string               // Options.StateDir: "" = nothing persists

	projects *projects       // callers' config chains (project.go)
	leases   *leases         // the lease registry (lease.go)
	sessions sessionRegistry // what is known of caller-owned keys (sessions.go)
	setMu    sync.Mutex      // serializes handing the pool its definitions

	// The call log: nil when records are off or there is no state
	// directory; recordsDir is "" only without a state directory.
	records    *calllog.Log
	recordsDir string
	bodies     bool // records keep arguments and results

	// observers see every finished tool call (ObserveCalls); nil = none.
	observers atomic.Pointer[[]func(CallEvent)]
	// notices fans children's notifications out to WatchNotices (forward.go).
	notices notices
	tasks   *taskRegistry // tasks.go
	pins    *pins         // tool definitions pinned (pins.go)
	limits  limiters      // rate limits and maxConcurrent (ratelimit.go)
	// subs are the resource subscriptions shared by callers (subscribe.go).
	subs *subscriptions
	// oauth signs in to url servers and authorizes their requests
	// (oauth.go, package mcp/oauth).
	oauth  *oauth.Client
	signIn signIns // sign-ins callers were asked to make (signin.go)

	mu   sync.RWMutex
	cfg  *config.Config // guarded by mu
	revs map[string]int // guarded by mu; per server, bumped when a refresh changed its program

	// nix.refresh (read at start): a worker re-resolves the specs and
	// environments in use on each tick and after each reload (nix.go).
	refreshPolicy string
	refreshNow    chan struct{} // a reload asks the worker for a pass; buffered 1
	refreshStop   context.CancelFunc
	refreshDone   chan struct{}     // closed when the worker has returned; nil = no worker
	refreshErrs   map[string]string // guarded by mu; the last failure logged per spec
}

// New builds a broker. It starts no children; Close stops them.
func New(opts Options) (*Broker, error) {
	if opts.Config == nil {
		return nil, &Error{Kind: KindConfig, Op: "start broker", Msg: "no config"}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pc := opts.Config.Pool
	// A second's revalidation window: a hot directory costs no stat per
	// call, and a `git init` or removed worktree is noticed within a second.
	b := &Broker{log: log, nix: opts.Nix, stateDir: opts.StateDir, revs: map[string]int{},
		scope:    NewResolver(ResolverOptions{Logger: log, Revalidate: time.Second, CeilingDirs: opts.Config.CeilingDirs}),
		leases:   newLeases(opts.Now),
		projects: newProjects(opts.Chain, log),
		sessions: sessionRegistry{m: map[string]*sessionMeta{}},
		tasks:    newTaskRegistry(opts.TaskRetention),
		subs:     newSubscriptions(),
		pins:     loadPins(stateFile(opts.StateDir, PinsFile), log, opts.Now),
	}
	b.oauth = oauth.New(oauth.Options{Dir: oauthDir(opts.StateDir), Logger: log, Now: opts.Now, OnEvent: b.oauthEvent})
	b.WatchNotices(b.tasks.notice)
	b.pool = pool.New(pool.Options{
		MaxInstances:   pc.MaxInstances,
		IdleTimeout:    pc.IdleTimeout.D(),
		ReapInterval:   cmp.Or(opts.ReapInterval, pc.ReapInterval.D()),
		WaitTimeout:    pc.WaitTimeout.D(),
		KeyAlive:       b.keyAlive,
		KeyIdleTimeout: b.sessions.idleTimeout,
		Env:            opts.Env,
		Logger:         log,
		Now:            opts.Now,
		ClientName:     "mcpx",
		ClientVersion:  cmp.Or(opts.Version, "dev"),

		MaxMessageBytes: opts.Config.Limits.MaxMessageBytes,
		RootsWait:       opts.Config.Limits.RootsWait.D(),
		MemoFile:        memoFile(opts.StateDir),
		TmpDir:          tmpDir(opts.StateDir),
		SchemaCacheFile: stateFile(opts.StateDir, SchemaCacheFile),
		Resolve:         resolveCommand(opts.Nix),
		Closure:         closureOf(opts.Nix),
		Egress:          opts.Egress,
		ExecHashMax:     opts.Config.Limits.ExecHashMax,
		ExecWatch:       cmp.Or(opts.ExecWatch, opts.Config.Pool.ExecWatch.D()),
		Survive:         pc.Survive,
		SurviveFile:     stateFile(opts.StateDir, SurviveFile),
		OnNotify: func(server, key, method string, params json.RawMessage) {
			if method == jsonrpc.MethodResourceUpdated {
				b.resourceUpdated(server, key, params) // its subscribers only
				return
			}
			b.notify(Notice{Server: server, Key: key, Method: method, Params: params})
		},
		OnTools: func(server string, tools json.RawMessage) { b.pins.observe(server, tools, nil, b.emitEvent) },
		URLTransport: func(server, account string, base http.RoundTripper) http.RoundTripper {
			return b.oauth.Transport(server, account, base)
		},
	})
	b.openRecords(opts)
	b.SetConfig(opts.Config)
	b.startRefresher(opts.Config.Nix)
	return b, nil
}

// openRecords starts the call log if the config has it on. It never fails:
// an unusable directory is a warning and a counter (package records).
func (b *Broker) openRecords(opts Options) {
	if opts.StateDir == "" {
		return
	}
	b.recordsDir = filepath.Join(opts.StateDir, RecordsDir)
	rc := opts.Config.Records
	if !rc.On() {
		return
	}
	b.bodies = rc.Bodies
	b.records = calllog.Open(calllog.Options{Dir: b.recordsDir, MaxBytes: rc.MaxBytes, MaxAge: rc.MaxAge.D(),
		MaxFiles: rc.MaxFiles, Logger: b.log, Now: opts.Now})
}

// SetConfig replaces the configuration. Instances of unchanged servers keep
// running; changed or removed servers' instances are drained and replaced.
// Pool-wide limits take effect at the next start of the daemon.
func (b *Broker) SetConfig(cfg *config.Config) {
	b.setMu.Lock()
	defer b.setMu.Unlock()
	// The owner's layers (override paths, /etc/mcpx, fallback paths)
	// merge around the daemon's own config; project files per caller.
	cfg = b.projects.load(cfg)
	running := map[string]bool{}
	for _, in := range b.pool.Instances() {
		running[in.Server] = true
	}
	b.projects.pruneDefs(running)
	b.mu.Lock()
	old := b.cfg
	b.cfg = cfg
	b.mu.Unlock()
	if old != nil && !reflect.DeepEqual(old.Nix, cfg.Nix) {
		b.log.Warn("the nix settings changed; they take effect at the next start of the daemon")
	}
	if old != nil && !reflect.DeepEqual(old.Records, cfg.Records) {
		b.log.Warn("the records settings changed; they take effect at the next start of the daemon")
	}
	if old != nil && !reflect.DeepEqual(old.Webhooks, cfg.Webhooks) {
		b.log.Warn("the webhooks changed; they take effect at the next start of the daemon")
	}
	if old != nil && !reflect.DeepEqual(old.Public, cfg.Public) {
		b.log.Warn("the public face's settings changed; they take effect at the next start of the daemon")
	}
	b.applyServers()
	if old != nil && b.refreshPolicy == config.NixRefreshOnReload {
		select {
		case b.refreshNow <- struct{}{}:
		default: // a pass is pending already; it will read this config
		}
	}
}

// Reload puts cfg in force as SetConfig does, then checks every running
// child's executable (a reload is also the way to say "I changed the
// program": a child whose program changed is replaced), and adds an
// EventReload saying what triggered it ("signal", "api", "config file").
func (b *Broker) Reload(cfg *config.Config, trigger string) {
	b.SetConfig(cfg)
	n := b.pool.CheckExec()
	b.pool.Events().Add(pool.Event{Kind: pool.EventReload, Reason: trigger})
	b.notify(Notice{Method: NoticeReload})
	if n > 0 {
		b.log.Info("reload replaced children whose executable changed", "instances", n)
	}
}

// ReloadRefused records a reload that found a config that does not load
// (the running one stays): an EventReloadRefused saying what triggered it
// and why, so a dashboard or `mcpx events` shows a typo the daemon ignored.
func (b *Broker) ReloadRefused(trigger string, err error) {
	b.pool.Events().Add(pool.Event{Kind: pool.EventReloadRefused, Reason: trigger + ": " + err.Error()})
}

func (b *Broker) currentConfig() *config.Config {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.cfg
}

// StopInstance stops one instance by ID after draining its calls.
// KindNotFound if there is none.
func (b *Broker) StopInstance(ctx context.Context, id string) error {
	return b.translate(b.pool.Stop(ctx, id), "stop instance", "")
}

// Close stops accepting calls, drains in-flight calls until ctx is done, and
// stops every child; then it writes the call records still queued.
func (b *Broker) Close(ctx context.Context) error {
	b.stopRefresher()
	b.tasks.close()
	b.subs.close()
	err := b.pool.Close(ctx)
	b.records.Close()
	return err
}
