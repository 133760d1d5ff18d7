// Package broker is mcpx's domain: it maps a caller's declared context to a
// scope key and root, and forwards calls to the pooled child for that key.
//
//	cfg, err := config.Load(path) // package mcpx.dev/mcpx/broker/config
//	b, err := broker.New(broker.Options{Config: cfg, Logger: log})
//	res, err := b.CallTool(ctx, broker.Request{Caller: c, Context: cc, Server: "demo"}, "echo", args, nil)
//	defer b.Close(ctx)
//
// Sessions (Sessions, SetSession, StopSession) are the instances sharing a
// caller-owned key; leases (AcquireLease, RenewLease, ReleaseLease) give
// callers with no watchable pid the pid scope's lifetime; a server's
// scopePolicy decides whether a caller's CallContext.Scope may replace its
// configured scope. See "Scope policy" and "Sessions and leases" in
// docs/architecture.md.
//
// A caller is served the servers of its config chain (package
// mcpx.dev/mcpx/broker/chain): the project files found upward from its cwd
// merged over the owner's config, for the owner and callers whose rights
// say ProjectConfig; everyone else gets the owner's config (ServersAt,
// ConfigSources; "Project config" in docs/architecture.md). Only servers
// merge: the pool, limits, nix and records sections are the daemon's own.
//
// It knows nothing of HTTP: the api package translates requests into
// Requests and *Error kinds into status codes.
package broker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"mcpx.dev/mcpx/broker/chain"
	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/internal/suggest"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/mcpclient"
	"mcpx.dev/mcpx/records"
)

// Caller is who is calling, as the API layer authenticated it.
type Caller struct {
	Name  string `json:"name"`          // login name, node name or "local:uid"
	Via   string `json:"via"`           // "unix", "tcp-loopback", "tailnet", "jwt"
	Uid   int    `json:"uid,omitempty"` // unix callers
	Local bool   `json:"local"`         // same machine (unix socket): Mcpx-Pid is trusted
	// Owner is the daemon's own user (a unix-socket peer of its uid, or a
	// loopback TCP caller with the daemon's token): sees private detail
	// (commands, paths, a child's stderr), and its session ids are not
	// namespaced, so the CLI and a script of the same user share sessions.
	Owner bool `json:"owner"`
	Admin bool `json:"admin"` // may stop instances, manage sessions
	// Servers and Roots restrict what the caller may name; nil = everything
	// (local callers). Empty non-nil = nothing.
	Servers []string `json:"servers,omitempty"`
	Roots   []string `json:"roots,omitempty"`
	// Scopes restricts the scope kinds the caller's calls may use (see
	// MayUseScope); nil = every kind, empty non-nil = none.
	Scopes []config.ScopeKind `json:"scopes,omitempty"`
	// ProjectConfig lets the project files on the caller's config chain
	// (config.json found upward from its cwd, below the user's config)
	// define the servers it is served: they name commands the daemon will
	// run. The owner always may; false = the owner's config only. See
	// "Project config" in docs/architecture.md.
	ProjectConfig bool `json:"projectConfig,omitempty"`
}

// Request is one call-like request: who, where, and which server.
type Request struct {
	Caller  Caller
	Context CallContext
	Server  string
	// CheckTool, if set, is given the Tool object the child lists under
	// the called name before CallTool calls it; an error it returns is
	// returned instead of calling (a generated client that knows the
	// tool's schemas under another hash gets KindStaleClient this way).
	// nil = no check.
	CheckTool func(tool json.RawMessage) error
	// OnInput answers the child's requests for input (elicitation,
	// sampling) attributed to this call (mcpclient.InputHandler; see
	// "Requests for input" in docs/architecture.md). nil = they are
	// refused: the child gets a decline.
	OnInput mcpclient.InputHandler
}

// ServerInfo describes a configured server to callers.
type ServerInfo struct {
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	Tags        []string         `json:"tags,omitempty"`
	Transport   string           `json:"transport"` // "stdio" or "http"
	Scope       config.ScopeKind `json:"scope"`
	Sharing     config.Sharing   `json:"sharing"`
	Max         int              `json:"max"`
	Instances   int              `json:"instances"` // running now
	// ToolTags and Prelude are the config's: tags per tool beside Tags, and
	// the text put before the server's declarations (config.Server).
	ToolTags map[string][]string `json:"toolTags,omitempty"`
	Prelude  string              `json:"prelude,omitempty"`
}

// ToolList is a server's tools and instructions, as the child of one scope
// gives them.
type ToolList struct {
	// Tools is the child's tools/list, all pages joined: a JSON array of
	// MCP Tool objects, as the child sent them.
	Tools json.RawMessage
	// Instructions are the instructions of the child's initialize result
	// (how to use the server's tools); "" when it sent none.
	Instructions string
}

// Instance is a pooled child, as status shows it.
type Instance = pool.InstanceStatus

// Stats are the pool-wide counters status shows.
type Stats = pool.Stats

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
	// See "Project config" in docs/architecture.md.
	Chain chain.Options
}

// MemoFile is the name of the pool's memo file in the state directory.
const MemoFile = "pool-memo.json"

// SchemaCacheFile is the name of the pool's schema cache (eras and lists
// per effective definition) in the state directory.
const SchemaCacheFile = "schema-cache.json"

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

	nix *nixresolve.Resolver // nil: nix: commands fail

	projects *projects       // callers' config chains (project.go)
	leases   *leases         // the lease registry (lease.go)
	sessions sessionRegistry // what is known of caller-owned keys (sessions.go)
	setMu    sync.Mutex      // serializes handing the pool its definitions

	// The call log: nil when records are off or there is no state
	// directory; recordsDir is "" only without a state directory.
	records    *records.Log
	recordsDir string
	bodies     bool // records keep arguments and results

	// observers see every finished tool call (ObserveCalls); nil = none.
	observers atomic.Pointer[[]func(CallEvent)]

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
	b := &Broker{log: log, nix: opts.Nix, revs: map[string]int{},
		scope:    NewResolver(ResolverOptions{Logger: log, Revalidate: time.Second, CeilingDirs: opts.Config.CeilingDirs}),
		leases:   newLeases(opts.Now),
		projects: newProjects(opts.Chain, log),
		sessions: sessionRegistry{m: map[string]*sessionMeta{}}}
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
		ExecHashMax:     opts.Config.Limits.ExecHashMax,
		ExecWatch:       cmp.Or(opts.ExecWatch, opts.Config.Pool.ExecWatch.D()),
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
	b.records = records.Open(records.Options{Dir: b.recordsDir, MaxBytes: rc.MaxBytes, MaxAge: rc.MaxAge.D(),
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

// Events is the log of lifecycle events: the pool's, and reloads.
func (b *Broker) Events() *pool.EventLog { return b.pool.Events() }

// applyServers hands the pool the current definitions, revisions included;
// the pool drains and replaces the instances of those that changed. The
// caller holds setMu, so that two updates reach the pool in order.
func (b *Broker) applyServers() {
	b.mu.RLock()
	cfg := b.cfg
	defs := make([]pool.Server, 0, len(cfg.Servers))
	for _, name := range sortedNames(cfg.Servers) {
		d := poolServer(name, cfg.Servers[name])
		d.Revision = b.revs[name]
		defs = append(defs, d)
	}
	b.mu.RUnlock()
	defs = append(defs, b.projects.projectDefs()...)
	b.pool.SetServers(defs)
}

// resolveCommand is the pool's Resolve hook: a nix: spec becomes its
// program's store path (with no nix process once cached: package
// nixresolve), a plain command stays as it is and is looked up on PATH at
// exec. A spec never falls back to PATH. An execution environment other
// than the host becomes its captured variables (cached the same way). The
// pool runs this in the spawning goroutine, so a slow resolution holds up
// only that start.
func resolveCommand(nix *nixresolve.Resolver) func(context.Context, string, string) (pool.Program, error) {
	return func(ctx context.Context, command, environment string) (pool.Program, error) {
		prog := pool.Program{Path: command}
		if environment != "" && environment != nixresolve.EnvHost {
			if nix == nil {
				return prog, fmt.Errorf("environment %s: this daemon has no nix resolver, so nix environments cannot be captured; use environment \"host\"", environment)
			}
			d, err := nix.Environment(ctx, environment)
			if err != nil {
				return prog, err
			}
			prog.Env, prog.Environment = d.EnvVars(), environment
			prog.EnvRev = cmp.Or(d.Locked.Rev, d.Locked.NarHash)
			if d.FileHash != "" {
				prog.EnvRev = "sha256:" + d.FileHash
			}
		}
		if !nixresolve.IsSpec(command) {
			return prog, nil
		}
		if nix == nil {
			return prog, fmt.Errorf("command %s: this daemon has no nix resolver, so nix: commands cannot run; use a plain command", command)
		}
		p, err := nix.Resolve(ctx, command)
		if err != nil {
			return prog, err
		}
		prog.Path, prog.Spec, prog.StorePath = p.Path, command, p.StorePath
		prog.Rev, prog.NarHash, prog.Pinned = p.Locked.Rev, p.Locked.NarHash, nixresolve.Pinned(command)
		return prog, nil
	}
}

func poolServer(name string, s *config.Server) pool.Server {
	return pool.Server{
		Name: name, Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd,
		URL: s.URL, Headers: s.Headers,
		InheritEnv: s.InheritEnv.Names, InheritAllEnv: s.InheritEnv.All,
		Environment:  s.Environment,
		Exclusive:    s.Sharing == config.SharingExclusive,
		Max:          s.Max,
		IdleTimeout:  s.IdleTimeout.D(),
		StartTimeout: s.StartTimeout.D(),
		Allocate:     poolAllocs(s.Allocate),
		Sampling:     s.Sampling,
	}
}

// poolAllocs are a server's allocations as the pool takes them; the config
// has checked them.
func poolAllocs(m map[string]*config.Alloc) map[string]pool.Alloc {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]pool.Alloc, len(m))
	for name, a := range m {
		if a != nil && len(a.Range) == 2 {
			out[name] = pool.Alloc{Range: [2]int{a.Range[0], a.Range[1]}}
		}
	}
	return out
}

func sortedNames(m map[string]*config.Server) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (b *Broker) currentConfig() *config.Config {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.cfg
}

// Servers lists the configured servers c may use, sorted by name.
func (b *Broker) Servers(c Caller) []ServerInfo {
	cfg := b.currentConfig()
	counts := map[string]int{}
	for _, in := range b.pool.Instances() {
		counts[in.Server]++
	}
	out := make([]ServerInfo, 0, len(cfg.Servers))
	for _, name := range sortedNames(cfg.Servers) {
		if c.MayUse(name) {
			out = append(out, serverInfo(name, cfg.Servers[name], counts[name]))
		}
	}
	return out
}

// ServersAt lists the servers r.Caller is served at r.Context.Cwd, sorted
// by name: the owner's config with, for the owner and callers whose rights
// say ProjectConfig, the project files of the cwd's config chain merged in
// (see "Project config" in docs/architecture.md). A project file that does
// not load fails with KindBadRequest naming it.
func (b *Broker) ServersAt(r Request) ([]ServerInfo, error) {
	sv, err := b.servedTo(r.Caller, r.Context.Cwd)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, in := range b.pool.Instances() {
		counts[in.Server]++
	}
	out := make([]ServerInfo, 0, len(sv.servers))
	for _, name := range sortedNames(sv.servers) {
		if r.Caller.MayUse(name) {
			out = append(out, serverInfo(name, sv.servers[name], counts[sv.poolName(name)]))
		}
	}
	return out, nil
}

// ServerAt describes r.Server as r.Caller is served it at r.Context.Cwd
// (ServersAt); KindNotFound if there is none by that name it may use.
func (b *Broker) ServerAt(r Request) (ServerInfo, error) {
	all, err := b.ServersAt(r)
	if err != nil {
		return ServerInfo{}, err
	}
	for _, si := range all {
		if si.Name == r.Server {
			return si, nil
		}
	}
	sv, err := b.servedTo(r.Caller, r.Context.Cwd)
	if err != nil {
		return ServerInfo{}, err
	}
	return ServerInfo{}, b.notFoundIn(sv, r.Server, r.Caller)
}

func serverInfo(name string, s *config.Server, n int) ServerInfo {
	tr := "stdio"
	if s.URL != "" {
		tr = "http"
	}
	return ServerInfo{Name: name, Description: s.Description, Tags: s.Tags, Transport: tr,
		Scope: s.Scope, Sharing: cmp.Or(s.Sharing, config.SharingShared), Max: cmp.Or(s.Max, pool.DefaultMax), Instances: n,
		ToolTags: s.ToolTags, Prelude: s.Prelude}
}

// Server describes one server; KindNotFound if there is none by that name
// that c may use.
func (b *Broker) Server(name string, c Caller) (ServerInfo, error) {
	s, err := b.lookup(name, c)
	if err == nil && !c.MayUse(name) {
		err = b.notFound(name, c) // to c, a server it may not use does not exist
	}
	if err != nil {
		return ServerInfo{}, err
	}
	n := 0
	for _, in := range b.pool.Instances() {
		if in.Server == name {
			n++
		}
	}
	return serverInfo(name, s, n), nil
}

// lookup finds a server by name. Not finding it, it names the servers c may
// use: a caller restricted to some servers does not learn the others.
func (b *Broker) lookup(name string, c Caller) (*config.Server, error) {
	cfg := b.currentConfig()
	if s := cfg.Servers[name]; s != nil {
		return s, nil
	}
	return nil, b.notFound(name, c)
}

// notFound is the error for a server c cannot see, naming those it can.
func (b *Broker) notFound(name string, c Caller) error {
	return notFoundAmong(b.currentConfig().Servers, name, c)
}

// notFoundIn is notFound among the servers c is served at its cwd.
func (b *Broker) notFoundIn(sv *served, name string, c Caller) error {
	return notFoundAmong(sv.servers, name, c)
}

func notFoundAmong(servers map[string]*config.Server, name string, c Caller) error {
	names := slices.DeleteFunc(sortedNames(servers), func(n string) bool { return !c.MayUse(n) })
	hint := "configured servers: " + strings.Join(names, ", ")
	if s := suggest.Closest(name, names); s != "" {
		hint = fmt.Sprintf("did you mean %q? %s", s, hint)
	}
	if len(names) == 0 {
		hint = "this caller may use no server"
	}
	return &Error{Kind: KindNotFound, Op: "find server", Server: name, Msg: "no such server", Hint: hint}
}

// MayUse reports whether c's rights name the server.
func (c Caller) MayUse(server string) bool {
	return c.Servers == nil || slices.Contains(c.Servers, server) || slices.Contains(c.Servers, "*")
}

// Tools returns the server's tools as the child listed them (all pages
// joined): a JSON array of MCP Tool objects.
func (b *Broker) Tools(ctx context.Context, r Request) (json.RawMessage, error) {
	l, err := b.ToolList(ctx, r)
	return l.Tools, err
}

// ToolList returns the server's tools and instructions from the child in
// r's scope (one child answers both). When that scope has no running child
// and the pool's schema cache knows what the child would run (after a
// daemon restart, an idle reap), the cached listing answers and no child
// starts; a call starts one (pool.ToolListing says how fresh it is).
func (b *Broker) ToolList(ctx context.Context, r Request) (ToolList, error) {
	if _, t, err := b.target(r); err == nil {
		if l, ok := b.pool.ToolListing(ctx, t); ok {
			return ToolList{Tools: l.Tools, Instructions: l.Instructions}, nil
		}
	}
	var out ToolList
	err := b.do(ctx, r, "list tools", func(ctx context.Context, s *mcpclient.Session) (err error) {
		out.Tools, err = s.Tools(ctx)
		out.Instructions = s.Instructions()
		return err
	})
	return out, err
}

// cachedList is r's list from the schema cache when no instance of its
// target runs (pool.CachedList), as ToolList answers tools: a listing
// after a restart starts no child.
func (b *Broker) cachedList(ctx context.Context, r Request, method string) (json.RawMessage, bool) {
	_, t, err := b.target(r)
	if err != nil {
		return nil, false
	}
	return b.pool.CachedList(ctx, t, method)
}

// CallTool calls tool with args (a JSON object; nil = {}) and returns the
// child's CallToolResult bytes unchanged. onProgress, if non-nil, receives the
// params of each notifications/progress the child sends for this call.
// Cancelling ctx sends notifications/cancelled to the child.
//
// Every call, from any listener, passes here: with records on, each ends
// with one record in the call log (Broker.CallStats).
func (b *Broker) CallTool(ctx context.Context, r Request, tool string, args json.RawMessage, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	obs := b.observers.Load()
	if b.records == nil && obs == nil {
		return b.callTool(ctx, r, tool, args, onProgress, nil)
	}
	start := time.Now()
	var info callInfo
	out, err := b.callTool(ctx, r, tool, args, onProgress, &info)
	b.finished(r, tool, info, start, args, out, err)
	return out, err
}

// callInfo is what callTool learned of where a call went.
type callInfo struct {
	key    string // the scope key the call landed on; "" if it named no server the caller may use
	listed bool   // the child listed the tool
}

// callTool is CallTool; info, if non-nil, is filled as the call goes.
func (b *Broker) callTool(ctx context.Context, r Request, tool string, args json.RawMessage, onProgress func(json.RawMessage), info *callInfo) (json.RawMessage, error) {
	if r.OnInput != nil {
		ctx = mcpclient.WithInputHandler(ctx, r.OnInput)
	}
	var out json.RawMessage
	var key *string
	if info != nil {
		key = &info.key
	}
	err := b.doAt(ctx, r, "call "+tool, key, func(ctx context.Context, sess *mcpclient.Session) error {
		def, ok, err := sess.Tool(ctx, tool)
		if err != nil {
			return err
		}
		if !ok {
			hint := fmt.Sprintf("`mcpx tools %s` lists its tools", r.Server)
			if s := suggest.Closest(tool, toolNames(ctx, sess)); s != "" {
				hint = fmt.Sprintf("did you mean %q? %s", s, hint)
			}
			return &Error{Kind: KindNotFound, Op: "call", Server: r.Server, Msg: fmt.Sprintf("no tool %q", tool), Hint: hint}
		}
		if info != nil {
			info.listed = true
		}
		if r.CheckTool != nil {
			if err := r.CheckTool(def); err != nil {
				return err
			}
		}
		out, err = sess.CallTool(ctx, tool, args, onProgress)
		return err
	})
	return out, err
}

// toolNames are the names in the child's (cached) tool list, for a hint.
func toolNames(ctx context.Context, sess *mcpclient.Session) []string {
	raw, err := sess.Tools(ctx)
	if err != nil {
		return nil
	}
	var tools []struct {
		Name string `json:"name"`
	}
	json.Unmarshal(raw, &tools) //nolint:errcheck // a hint: no names, no suggestion
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

// Resources returns the server's resources: a JSON array of MCP Resource objects.
func (b *Broker) Resources(ctx context.Context, r Request) (json.RawMessage, error) {
	if l, ok := b.cachedList(ctx, r, "resources/list"); ok {
		return l, nil
	}
	var out json.RawMessage
	err := b.do(ctx, r, "list resources", func(ctx context.Context, s *mcpclient.Session) (err error) {
		out, err = s.Resources(ctx)
		return err
	})
	return out, err
}

// ReadResource returns the child's resources/read result for uri.
func (b *Broker) ReadResource(ctx context.Context, r Request, uri string) (json.RawMessage, error) {
	var out json.RawMessage
	err := b.do(ctx, r, "read resource", func(ctx context.Context, s *mcpclient.Session) (err error) {
		out, err = s.ReadResource(ctx, uri)
		return err
	})
	return out, err
}

// Prompts returns the server's prompts: a JSON array of MCP Prompt objects.
func (b *Broker) Prompts(ctx context.Context, r Request) (json.RawMessage, error) {
	if l, ok := b.cachedList(ctx, r, "prompts/list"); ok {
		return l, nil
	}
	var out json.RawMessage
	err := b.do(ctx, r, "list prompts", func(ctx context.Context, s *mcpclient.Session) (err error) {
		out, err = s.Prompts(ctx)
		return err
	})
	return out, err
}

// GetPrompt returns the child's prompts/get result.
func (b *Broker) GetPrompt(ctx context.Context, r Request, name string, args map[string]string) (json.RawMessage, error) {
	var out json.RawMessage
	err := b.do(ctx, r, "get prompt", func(ctx context.Context, s *mcpclient.Session) (err error) {
		out, err = s.GetPrompt(ctx, name, args)
		return err
	})
	return out, err
}

// Instances lists the pooled children, sorted by server then key.
func (b *Broker) Instances() []Instance { return b.pool.Instances() }

// Stats returns the pool-wide counters (spawns, evictions, 503s, ...).
func (b *Broker) Stats() Stats { return b.pool.Stats() }

// StopInstance stops one instance by ID after draining its calls.
// KindNotFound if there is none.
func (b *Broker) StopInstance(ctx context.Context, id string) error {
	return b.translate(b.pool.Stop(ctx, id), "stop instance", "")
}

// Close stops accepting calls, drains in-flight calls until ctx is done, and
// stops every child; then it writes the call records still queued.
func (b *Broker) Close(ctx context.Context) error {
	b.stopRefresher()
	err := b.pool.Close(ctx)
	b.records.Close()
	return err
}

// Target resolves where r would land, without calling anything.
func (b *Broker) Target(r Request) (pool.Target, error) {
	_, t, err := b.target(r)
	return t, err
}

func (b *Broker) target(r Request) (*config.Server, pool.Target, error) {
	sv, err := b.servedTo(r.Caller, r.Context.Cwd)
	if err != nil {
		return nil, pool.Target{}, err
	}
	def := sv.servers[r.Server]
	if def == nil {
		return nil, pool.Target{}, b.notFoundIn(sv, r.Server, r.Caller)
	}
	c := r.Caller
	if !c.MayUse(r.Server) {
		return nil, pool.Target{}, &Error{Kind: KindForbidden, Op: "authorize", Server: r.Server, Msg: "this caller may not use this server"}
	}
	cc := r.Context
	if !c.Local {
		cc.Pid = 0 // only a unix-socket peer's pid means anything here
	}
	if cc.Cwd != "" {
		cwd, err := b.scope.CanonicalCwd(cc.Cwd)
		if err != nil {
			return nil, pool.Target{}, err
		}
		if !underAny(cwd, c.Roots) {
			return nil, pool.Target{}, &Error{Kind: KindForbidden, Op: "authorize", Server: r.Server, Field: "Mcpx-Cwd",
				Msg: "the declared cwd is outside the roots this caller may use"}
		}
		cc.Cwd = cwd
	}
	if cc.CallID == "" {
		cc.CallID = newCallID()
	}
	kind, err := scopeFor(r.Server, def, cc.Scope)
	if err != nil {
		return nil, pool.Target{}, err
	}
	// The caller's rights bound the scope the call will use: the
	// configured one, or the override the server's policy allowed.
	if err := c.checkScope(r.Server, kind); err != nil {
		return nil, pool.Target{}, err
	}
	if err := b.leases.checkDeclared(cc.Lease, c); err != nil {
		return nil, pool.Target{}, err
	}
	rs := b.scope.Resolve(kind, cc)
	rs.Key = callerKey(rs.Key, c)
	if rs.Root != "" && !underAny(rs.Root, c.Roots) {
		// Git discovery walks up: the repo or worktree may begin above the
		// directories this caller may use. Never hand it a child rooted
		// there; fall back to its own cwd, which was checked above.
		rs = b.scope.Resolve(config.ScopeCwd, cc)
		rs.Degraded = "the repository root lies outside the caller's allowed roots"
	}
	b.noteSession(rs.Key, c, cc.Cwd)
	poolName := sv.poolName(r.Server)
	if poolName != r.Server {
		b.ensureDef(poolName, sv.sources[r.Server].File, def)
	}
	return def, pool.Target{
		Server: poolName, Key: rs.Key, Root: rs.Root, Cwd: cc.Cwd, Degraded: rs.Degraded,
		Ephemeral: strings.HasPrefix(rs.Key, "call:"),
	}, nil
}

// callerKey confines keys named by caller-chosen ids (sessions, leases) to
// the caller that chose them: two remote callers who send the same
// Mcpx-Session must not share a child or its state. Such a key names the
// caller by how it came and by its name, `session:@<via>:<name>/<id>`
// (the name path-escaped, so it holds no "/"): a token whose subject is
// "alice" and the tailnet login "alice" are two callers. The owner's
// callers (unix socket or token) are one user and share freely, under the
// id as sent; an owner's id that begins with "@" gets one more, so it can
// never be read as another caller's key. Directory keys are shared by
// design (the roots check guards them).
func callerKey(key string, c Caller) string {
	for _, p := range callerKeyPrefixes {
		rest, ok := strings.CutPrefix(key, p)
		if !ok {
			continue
		}
		if c.Owner {
			if strings.HasPrefix(rest, "@") {
				return p + "@" + rest
			}
			return key
		}
		return p + "@" + c.Via + ":" + url.PathEscape(c.Name) + "/" + rest
	}
	return key
}

// callerKeyPrefixes are the scope-key prefixes of caller-chosen ids.
var callerKeyPrefixes = []string{"session:", "psession:", "lease:"}

// OwnsKey reports whether key is one of c's own caller-chosen keys (a
// session, parent session or lease key callerKey made for c). Other keys —
// directory keys, global, pid: and call: — are nobody's in this sense.
func (c Caller) OwnsKey(key string) bool {
	for _, p := range callerKeyPrefixes {
		rest, ok := strings.CutPrefix(key, p)
		if !ok {
			continue
		}
		if c.Owner {
			return !strings.HasPrefix(rest, "@") || strings.HasPrefix(rest, "@@")
		}
		return strings.HasPrefix(rest, "@"+c.Via+":"+url.PathEscape(c.Name)+"/")
	}
	return false
}

// MayUseDir reports whether c's rights reach the canonical directory path:
// it lies under one of c's roots (nil roots: anywhere).
func (c Caller) MayUseDir(path string) bool { return underAny(path, c.Roots) }

// underAny reports whether path lies under one of roots; nil roots = anywhere.
// Both sides are canonical (roots are canonicalised when the grant is made).
func underAny(path string, roots []string) bool {
	if roots == nil {
		return true
	}
	for _, r := range roots {
		r = filepath.Clean(r)
		if path == r || strings.HasPrefix(path, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// callIDs are unique per daemon run: a random prefix drawn once, then a
// counter, so naming a call costs no syscall on the hot path.
var (
	callIDPrefix = func() string {
		var b [4]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	callIDSeq atomic.Uint64
)

func newCallID() string {
	return callIDPrefix + "-" + strconv.FormatUint(callIDSeq.Add(1), 10)
}

// do resolves r to an instance and runs fn on its session under the
// server's call timeout.
func (b *Broker) do(ctx context.Context, r Request, op string, fn func(context.Context, *mcpclient.Session) error) error {
	return b.doAt(ctx, r, op, nil, fn)
}

// doAt is do; *key, if key is non-nil, is set to the scope key r resolved
// to (left alone if r is refused before it has one).
func (b *Broker) doAt(ctx context.Context, r Request, op string, key *string, fn func(context.Context, *mcpclient.Session) error) error {
	def, t, err := b.target(r)
	if err != nil {
		return err
	}
	if key != nil {
		*key = t.Key
	}
	// callTimeout bounds the call, not the wait for a starting child: that
	// has its own startTimeout, and the caller's deadline bounds both.
	d := def.CallTimeout.D()
	err = b.pool.Do(ctx, t, func(s *mcpclient.Session) error {
		if d <= 0 {
			return fn(ctx, s)
		}
		cctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		err := fn(cctx, s)
		if err != nil && cctx.Err() != nil && ctx.Err() == nil {
			return &Error{Kind: KindTimeout, Op: op, Server: r.Server, Err: err,
				Msg:  fmt.Sprintf("the call ran past the server's callTimeout of %s; the child was sent notifications/cancelled", d),
				Hint: "raise callTimeout in the server's config if such calls are expected to take longer"}
		}
		return err
	})
	return b.translate(err, op, r.Server)
}

// translate maps pool and protocol errors to *Error kinds.
func (b *Broker) translate(err error, op, server string) error {
	if err == nil {
		return nil
	}
	var be *Error
	if errors.As(err, &be) {
		return err
	}
	var rpc *mcpclient.RPCError
	if errors.As(err, &rpc) {
		e := &Error{Op: op, Server: server, Msg: rpc.Message, RPCCode: rpc.Code, Err: err, Kind: KindChildFailed}
		switch rpc.Code {
		case -32602: // Invalid params: the child rejected the arguments.
			e.Kind = KindBadRequest
		case -32601: // Method not found: the child does not offer this.
			e.Kind = KindNotFound
		}
		return e
	}
	if e := childTransportError(err, op, server); e != nil {
		return e
	}
	var pe *pool.Error
	if !errors.As(err, &pe) {
		if errors.Is(err, context.DeadlineExceeded) {
			return &Error{Kind: KindTimeout, Op: op, Server: server, Msg: "timed out", Err: err}
		}
		if errors.Is(err, context.Canceled) {
			return &Error{Kind: KindCanceled, Op: op, Server: server, Msg: "the caller went away", Err: err}
		}
		if errors.Is(err, mcpclient.ErrClosed) {
			return &Error{Kind: KindChildFailed, Op: op, Server: server, Err: err,
				Msg: "the server ended our session during the call (a url server that keeps forgetting sessions, or a child that closed its stdout)"}
		}
		// What is left came from the child's transport (an HTTP status, a
		// refused connection, a malformed answer): the child failed, and
		// the detail, which may name internal addresses, goes to the log.
		return &Error{Kind: KindChildFailed, Op: op, Server: server, Err: err,
			Msg: "the server's transport failed during the call; the daemon log has the detail"}
	}
	// pe.Detail may name commands, paths and URLs of the daemon's machine:
	// it is Private. Msg is what any caller may read.
	e := &Error{Op: op, Server: cmp.Or(server, pe.Server), Msg: pe.Detail, StderrTail: pe.StderrTail, RetryAfter: pe.RetryAfter, Err: err}
	private := func(msg string) {
		e.Private = msg
		if pe.Detail != "" {
			e.Private = msg + ": " + pe.Detail
		}
		e.Msg = msg
	}
	switch {
	case errors.Is(err, pool.ErrUnknownServer), errors.Is(err, pool.ErrNotFound):
		e.Kind = KindNotFound
		e.Msg = cmp.Or(pe.Detail, "not found")
	case errors.Is(err, pool.ErrExhausted):
		e.Kind = KindExhausted
	case errors.Is(err, pool.ErrBackoff):
		e.Kind = KindUnavailable
		private("the server keeps failing to start; waiting before trying again. Last error")
		e.Hint = "check `mcpx status` and the daemon log for the child's stderr"
	case errors.Is(err, pool.ErrClosed):
		e.Kind = KindUnavailable
		e.RetryAfter = time.Second
	case errors.Is(err, pool.ErrTimeout):
		e.Kind = KindTimeout
	case errors.Is(err, pool.ErrStartTimeout):
		e.Kind = KindTimeout
		private("the server did not finish starting in time")
	case errors.Is(err, nixresolve.ErrTimeout):
		// Resolving its nix: command (lock, evaluate, build) ran out of
		// nix.timeout: a timeout, not a failed child.
		e.Kind = KindTimeout
		private("resolving the server's nix: command timed out")
		e.Hint = "raise nix.timeout in the config for a cold build, or check the flake; `mcpx status` and the daemon log have nix's output"
	case errors.Is(err, pool.ErrCanceled):
		e.Kind = KindCanceled
	case errors.Is(err, pool.ErrSpawnConfig):
		e.Kind = KindBadRequest
		e.Field = "scope"
		private("the server's command line needs a root or cwd this call does not have")
	case errors.Is(err, pool.ErrCrashed):
		e.Kind = KindChildFailed
		private("the server exited")
	default: // ErrStart
		e.Kind = KindChildFailed
		private("the server failed to start")
	}
	return e
}

// childTransportError explains an oversized answer or a url server's HTTP
// error status; nil for other errors.
func childTransportError(err error, op, server string) *Error {
	var tl *mcpclient.TooLargeError
	if errors.As(err, &tl) {
		e := &Error{Kind: KindChildFailed, Op: op, Server: server, Err: err,
			Msg:  fmt.Sprintf("the server's answer is larger than the limit of %d bytes (limits.maxMessageBytes); it was dropped", tl.Limit),
			Hint: "raise limits.maxMessageBytes in the config if such answers are expected"}
		if errors.Is(err, mcpclient.ErrClosed) {
			e.Msg += ", and the session could not go on: the server is restarted on the next call"
		}
		return e
	}
	var hs *mcpclient.HTTPStatusError
	if !errors.As(err, &hs) {
		return nil
	}
	e := &Error{Kind: KindChildFailed, Op: op, Server: server, Err: err,
		Msg:     fmt.Sprintf("the url server answered HTTP %s", hs.Status),
		Private: fmt.Sprintf("the url server answered %s %s with HTTP %s", hs.Method, hs.URL, hs.Status)}
	if hs.Body != "" {
		e.Private += fmt.Sprintf(": %q", hs.Body)
	}
	switch {
	case hs.StatusCode == 401:
		e.Hint = `the server needs credentials: set them in the server's "headers" in the config (e.g. "Authorization": "Bearer …")`
	case hs.StatusCode == 403:
		e.Hint = `the credentials in the server's "headers" in the config are not allowed to do this`
	case hs.StatusCode == 404:
		e.Hint = "check the server's url in the config"
	case hs.StatusCode >= 500:
		e.Hint = "the url server failed; see its own logs"
	}
	return e
}

// keyAlive reports whether the owner of a caller-owned key still exists.
// pid: keys are checked with kill(pid, 0); other keys live until idle.
func keyAlive(key string) bool {
	rest, ok := strings.CutPrefix(key, "pid:")
	if !ok {
		return true
	}
	pid, err := strconv.Atoi(rest)
	if err != nil || pid <= 0 {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
