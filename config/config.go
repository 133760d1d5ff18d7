// Package config reads and checks mcpx's config file: the servers it may
// start, their scopes and limits, and the pool's limits.
//
//	cfg, err := config.Load(path) // or config.Parse(data, source)
//	if err != nil {
//		fmt.Println(err) // every problem, each naming the server and field
//	}
//	b, err := broker.New(broker.Options{Config: cfg})
//
// Every problem names the server and the field and suggests the fix, with a
// "did you mean" for misspelt names. Strings keep their ${mcpx.*}
// placeholders (see package mcpx.dev/mcpx/internal/placeholder): root, cwd,
// instance, index, key, tmpdir and alloc.NAME for the server's allocate
// block (Alloc); the pool substitutes them per instance. Defaults are filled in, so a
// parsed Config says exactly what will run.
//
// The package is a leaf over leaves: reading a config links neither the
// pool, the call log nor the nix resolver. The defaults it fills are
// stated in package mcpx.dev/mcpx/internal/defaults, which those packages
// read too, and nix: commands and environments are checked with the
// grammar of package mcpx.dev/mcpx/nixresolve/nixspec.
//
// # Client formats
//
// Besides its own {"servers": {...}} format, the package reads the config
// files of MCP clients as they are: VS Code's mcp.json, Claude Desktop's
// claude_desktop_config.json, Cline's cline_mcp_settings.json and Cursor's
// mcp.json. A document is in a client's format when its servers are under
// "mcpServers", it has a top-level "inputs", "globalShortcut" or
// "preferences", or one of its servers names its transport ("type" or
// "transportType"), which mcpx's own format leaves to command or url.
//
// In a client's format a key mcpx does not know is a warning that it is
// ignored (Config.Warnings), not an error; in mcpx's own format it stays an
// error. In any file, a key within a typo of one mcpx knows ("comand",
// "scop") is an error with a "did you mean", since ignoring it would change
// what runs. The client keys mcpx knows are accepted in any file:
//
//   - "disabled": true: the server is checked, its problems are only
//     warnings, and it is not served (Config.Disabled names it).
//   - "type" and Cline's "transportType": "stdio", "http",
//     "streamable-http" or "streamableHttp", checked against command or
//     url. "sse" is an error naming the server and field: mcpx speaks
//     streamable HTTP only, and an SSE endpoint would fail every call.
//   - "envFile" is an error where used: mcpx reads no environment files.
//   - "${input:id}" in a value is an error naming the server and field:
//     mcpx never prompts, so the value must be written in the config. An
//     "inputs" array that no server uses is only a warning.
//   - ${env:NAME}, ${workspaceFolder}, ${userHome} and the clients' other
//     variables are warnings: mcpx expands only ${mcpx.root} and
//     ${mcpx.cwd}, and passes the rest to the server as written.
//   - A url ending in /sse with no type is a warning: Cline reads such a
//     server as SSE, mcpx as streamable HTTP.
//   - A command server with no "scope" is spawned as its client would
//     spawn it: scope global (one child, in the daemon's directory) and
//     "roots": false (no MCP roots offered), since a server such as
//     server-filesystem replaces the directories its arguments name with
//     the roots it is offered. Setting "scope", or using ${mcpx.root} or
//     ${mcpx.cwd}, opts in to mcpx's scopes and roots; "roots": false
//     keeps the roots off in any file.
//   - "autoApprove", "alwaysAllow", "timeout" (Cline's), "dev" (VS Code's),
//     and Claude Desktop's "globalShortcut" and "preferences" mean nothing
//     to a broker and are ignored without a warning.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"

	"mcpx.dev/mcpx/auth/rights"
)

// Config is the daemon owner's configuration. The zero Config has no servers;
// Default returns the one served when no config file exists.
type Config struct {
	// Servers by name. Names are [A-Za-z0-9_-]+ (they appear in URLs and in
	// "server.tool" CLI arguments).
	Servers map[string]*Server `json:"servers"`
	Pool    Pool               `json:"pool"`
	Limits  Limits             `json:"limits"`
	// Nix bounds the resolution of nix:<flakeref>#attr commands.
	Nix Nix `json:"nix"`
	// Records configures the call log in <state>/records.
	Records Records `json:"records"`
	// Log configures the daemon's log: levels, and its files in <state>/logs.
	Log Log `json:"log"`
	// CeilingDirs stop git discovery from walking up into them, like
	// GIT_CEILING_DIRECTORIES: with a dotfiles repository at ~/.git, list
	// your home directory here, or every directory under it that is not
	// a repository of its own resolves to the home "worktree". Absolute.
	CeilingDirs []string `json:"ceilingDirs,omitempty"`
	// Script is what `mcpx run` and `mcpx exec` put around every script
	// (each layer of the chain may set it; the CLI merges them).
	Script Script `json:"script,omitzero"`
	// MCP is the MCP endpoint's tool surface: tools, code mode or both.
	MCP MCP `json:"mcp,omitzero"`
	// Registry is the MCP registry `mcpx registry` asks (registry.go).
	Registry Registry `json:"registry,omitzero"`
	// Webhooks receive the lifecycle events (webhooks.go).
	Webhooks []Webhook `json:"webhooks,omitempty"`
	// OTel turns on OpenTelemetry traces (otel.go).
	OTel OTel `json:"otel,omitzero"`
	// Defaults are what every server takes unless it sets its own
	// (sandbox.go): "defaults": {"sandbox": true} confines them all.
	Defaults Defaults `json:"defaults,omitzero"`
	// Public configures the public face beyond its flags (public.go):
	// pre-registered clients of its authorization server, or an external
	// issuer and how its tokens' claims map to rights.
	Public Public `json:"public,omitzero"`
	// Source is the file the config was read from ("" for the built-in one).
	Source string `json:"-"`
	// Disabled names the servers marked "disabled": true, in document
	// order. They are checked (their problems are warnings) but not served,
	// and are not in Servers.
	Disabled []string `json:"-"`
	// Warnings are what the document has that mcpx reads but ignores (see
	// the package doc), each naming the server and field like an error.
	// They do not stop the config loading; `mcpx config check` prints them
	// and `mcpx serve` logs them.
	Warnings []*Problem `json:"-"`
}

// Server is one child MCP server. Exactly one of Command, URL, OpenAPI and
// CLI is set.
// String fields keep their ${mcpx.*} placeholders; they are substituted
// per instance only.
type Server struct {
	Name string `json:"-"` // the key in Config.Servers

	// stdio child
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"` // "" = the instance root, else unset
	// InheritEnv: the daemon's variables the child gets beyond the
	// allowlist; the zero value passes the allowlist only.
	InheritEnv InheritEnv `json:"inheritEnv,omitzero"`
	// Environment is where the child runs: "host" (the default: the
	// daemon's environment, filtered as InheritEnv says), "flake:<ref>[#attr]"
	// (that flake's devShell), "shell:<file>" (a legacy shell.nix),
	// captured once by nix print-dev-env (package nixresolve),
	// EnvironmentAuto, or EnvironmentIsolated.
	Environment string `json:"environment,omitempty"`
	// Dependencies are the nix: packages an isolated environment holds
	// beside the command's own (a nix: command): its PATH is their bin
	// directories and nothing of the host's. Only with EnvironmentIsolated.
	Dependencies []string `json:"dependencies,omitempty"`

	// streamable-HTTP child
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// OAuth is how mcpx identifies itself signing in to the url server
	// (docs/oauth.md); nil = dynamic registration where offered.
	OAuth *OAuth `json:"oauth,omitempty"`

	// adapters: a namespace that is not an MCP child (package adapter)
	OpenAPI *OpenAPI `json:"openapi,omitempty"` // an OpenAPI service's operations as tools
	CLI     *CLI     `json:"cli,omitempty"`     // command lines as tools

	Scope       ScopeKind `json:"scope,omitempty"`       // "" = worktree for command servers, global for url servers
	Sharing     Sharing   `json:"sharing,omitempty"`     // "" = shared
	Max         int       `json:"max,omitempty"`         // instances of this server; 0 = pool.DefaultMax
	IdleTimeout Duration  `json:"idleTimeout,omitempty"` // 0 = Config.Pool.IdleTimeout
	CallTimeout Duration  `json:"callTimeout,omitempty"` // 0 = DefaultCallTimeout
	// Rate limits the calls of every caller together to the server, across
	// all its instances (rate.go); Burst is how many may come at once (0
	// = the rate's count), MaxConcurrent how many may run at once (0 = no
	// limit; more wait for a slot up to pool.waitTimeout).
	Rate          rights.Rate `json:"rate,omitzero"`
	Burst         int         `json:"burst,omitempty"`
	MaxConcurrent int         `json:"maxConcurrent,omitempty"`
	StartTimeout  Duration    `json:"startTimeout,omitempty"` // 0 = pool.DefaultStartTimeout; spawn + initialize
	Tags          []string    `json:"tags,omitempty"`         // every tool of the server has them, for search
	Description   string      `json:"description,omitempty"`
	// ScopePolicy says which scopes a caller may ask for with the
	// Mcpx-Scope header; the zero value allows no override.
	ScopePolicy ScopePolicy `json:"scopePolicy,omitzero"`
	// ToolTags are extra tags per tool name, for search, beside Tags.
	ToolTags map[string][]string `json:"toolTags,omitempty"`
	// Allocate are per-instance allocations by name: each instance of the
	// server holds its own port from the range while it lives, which
	// ${mcpx.alloc.NAME} stands for (see Alloc).
	Allocate map[string]*Alloc `json:"allocate,omitempty"`
	// Prelude is text put before the server's generated declarations
	// (`mcpx types`), as comment lines: how to use its tools where their
	// descriptions do not say (how to obtain an id, say). At most
	// MaxPreludeBytes, printable text and newlines.
	Prelude string `json:"prelude,omitempty"`
	// Sampling declares the sampling capability to the server's children,
	// so that their sampling/createMessage requests during a call go to
	// the call's streaming caller (false: not declared; a child that asks
	// anyway gets an error). Elicitation is always declared: a decline is
	// always a valid answer. See docs/input.md.
	Sampling bool `json:"sampling,omitempty"`
	// Protocol pins the protocol era mcpx speaks to the server's
	// children: "handshake" (initialize, 2025-11-25 and before),
	// "stateless" (2026-07-28, server/discover first; a child that does
	// not speak it is initialized), or "" / "auto" (the era an earlier
	// child of the definition spoke, else stateless first). A child whose
	// tools still send server-to-client requests during a call (a go-sdk
	// server calling Elicit) needs "handshake": the stateless era has
	// them answer with input_required instead.
	Protocol string `json:"protocol,omitempty"`
	// Roots says whether the server's children are offered the instance
	// root as MCP roots (roots/list): nil or true = they are, when the
	// scope gives the instance a root; false = never, so a server whose
	// arguments name its directories (server-filesystem replaces them
	// with the roots it is offered) keeps them. A command server in a
	// client's format with no "scope" gets the client's semantics: scope
	// global and roots false (see "Client formats").
	Roots *bool `json:"roots,omitempty"`
	// CallerRoots answers a child's roots/list asked during a call (a
	// stateless child's input_required round) with the calling client's
	// roots, those the caller's rights allow, instead of the instance
	// root: the client is asked, as for elicitation. For servers whose
	// tools work on the caller's directories; off by default, because a
	// shared child then learns each caller's roots. A caller that cannot
	// be asked gets the instance root. See docs/input.md.
	CallerRoots bool `json:"callerRoots,omitempty"`
	// PinTools withholds from every caller a tool whose definition (name,
	// title, description, schemas, annotations) is not one the owner
	// approved: the first listing of the server is approved as it is
	// (but tools flagged as carrying instructions to the model), a tool
	// that changes or appears later waits for `mcpx tools approve`.
	// false = changes are reported (a tool-changed event, `mcpx status`)
	// and the tools served. See "Tool pins" in docs/trust.md.
	PinTools bool `json:"pinTools,omitempty"`
	// Health pings the server's idle children (life.go); nil = pool.health.
	Health *Health `json:"health,omitempty"`
	// Min is how many instances are kept running, for the keys known
	// (a global server's, else the last Min keys used), restarted when
	// they die; 0 = none kept.
	Min int `json:"min,omitempty"`
	// Warm starts an instance at the daemon's start and reload to list
	// its tools into the schema cache, then lets it idle out.
	Warm bool `json:"warm,omitempty"`
	// Ready says when a started stdio child is ready for its first call,
	// beyond answering initialize; nil = as soon as it has answered (and
	// its start-up roots/list, if it asks one, has been answered).
	Ready *Ready `json:"ready,omitempty"`
	// Sandbox confines the server's children with what the kernel
	// enforces (sandbox.go); nil = Config.Defaults.Sandbox's setting.
	// Whatever it says, a caller who is not the owner gets a confined
	// child (docs/sandbox.md).
	Sandbox *Sandbox `json:"sandbox,omitempty"`
}

// Ready is a server's readiness signal.
type Ready struct {
	// Stderr is a regular expression (Go syntax): the child is ready once
	// a line it writes to stderr matches, bounded by startTimeout. For a
	// server that applies its MCP roots asynchronously, such as
	// server-filesystem ("Updated allowed directories from MCP roots").
	Stderr string `json:"stderr"`
}

// OffersRoots reports whether s's children are offered MCP roots (Roots).
func (s *Server) OffersRoots() bool { return s.Roots == nil || *s.Roots }

// MaxPreludeBytes bounds a server's prelude: it is read by agents with a
// context budget, next to the declarations it explains.
const MaxPreludeBytes = 4096

// Sharing says how concurrent callers with the same key use one instance.
type Sharing string

const (
	SharingShared    Sharing = "shared"    // many callers multiplexed on one child
	SharingExclusive Sharing = "exclusive" // one caller at a time; others wait until their deadline
)

// ScopeKind names how callers are grouped onto instances. See the table in
// docs/scopes.md: the kind decides the key and the root. The broker's
// Resolver maps a kind and a caller to a key.
type ScopeKind string

const (
	ScopeGlobal        ScopeKind = "global"
	ScopeRepo          ScopeKind = "repo"
	ScopeWorktree      ScopeKind = "worktree"
	ScopeCwd           ScopeKind = "cwd"
	ScopeSession       ScopeKind = "session"
	ScopeParentSession ScopeKind = "parent-session"
	ScopePid           ScopeKind = "pid"
	ScopeCall          ScopeKind = "call"
)

// Pool holds daemon-wide pool limits.
type Pool struct {
	MaxInstances int      `json:"maxInstances,omitempty"` // 0 = pool.DefaultMaxInstances
	ReapInterval Duration `json:"reapInterval,omitempty"` // 0 = pool.DefaultReapInterval
	WaitTimeout  Duration `json:"waitTimeout,omitempty"`  // 0 = pool.DefaultWaitTimeout; a call's wait for room in a full pool
	// ExecWatch is how often each running stdio child's executable is
	// stat'ed; a child whose program changed is drained and replaced.
	// 0 = pool.DefaultExecWatch; "off" = never (a reload still checks).
	ExecWatch Period `json:"execWatch,omitempty"`
	// IdleTimeout is the idle timeout of servers that set none: one, or
	// one per scope (IdleTimeouts); 0 = pool.DefaultIdleTimeout.
	IdleTimeout IdleTimeouts `json:"idleTimeout,omitzero"`
	// Health is the health check of servers that set none; nil = none.
	Health *Health `json:"health,omitempty"`
	// ScopePolicy, if set, bounds every server's scope policy (a project
	// file's too): an override must be allowed by both.
	ScopePolicy *ScopePolicy `json:"scopePolicy,omitempty"`
	// Survive: stdio children outlive a daemon that is killed, and the
	// next daemon of the same state directory adopts them (pool.Options.Survive).
	Survive bool `json:"survive,omitempty"`
}

// Limits bound what callers and children may send the daemon, so that no
// request or answer can hurt the children other callers share.
type Limits struct {
	// MaxDepth bounds the nesting of JSON arrays and objects in tool and
	// prompt arguments; deeper requests are refused with 400 before they
	// reach a child. 0 = DefaultMaxDepth.
	MaxDepth int `json:"maxDepth,omitempty"`
	// MaxMessageBytes bounds one message from a child (a stdio line, an
	// HTTP body or SSE event); a larger answer fails its call with 502.
	// 0 = pool.DefaultMaxMessageBytes.
	MaxMessageBytes int `json:"maxMessageBytes,omitempty"`
	// RootsWait bounds how long a new child with a root is given to ask
	// roots/list after initialize, so that its first call sees the root
	// (server-filesystem asks, then applies the answer asynchronously).
	// Learned per server: one that never asks is not waited for again.
	// 0 = pool.DefaultRootsWait.
	RootsWait Duration `json:"rootsWait,omitempty"`
	// ExecHashMax is the largest executable whose content is hashed for
	// its identity; larger ones are identified by their stat (device,
	// inode, size, mtime, mode). 0 = pool.DefaultExecHashMax (1 MiB).
	ExecHashMax int64 `json:"execHashMax,omitempty"`
	// InputWait bounds how long a child's request for input during a call
	// (elicitation, sampling) waits for the caller's answer; then the
	// child gets a decline (an error for sampling). 0 = DefaultInputWait.
	InputWait Duration `json:"inputWait,omitempty"`
	// OwnerRate limits the calls of the daemon's own user, as a grant's
	// rate limits a caller's; OwnerBurst is its burst (0 = its count).
	// The zero OwnerRate: the owner is unlimited.
	OwnerRate  rights.Rate `json:"ownerRate,omitzero"`
	OwnerBurst int         `json:"ownerBurst,omitempty"`
}

// DefaultInputWait is Limits.InputWait's default.
const DefaultInputWait = 2 * time.Minute

// Nix configures how servers' nix:<flakeref>[#attr] commands are resolved
// to store paths (package mcpx.dev/mcpx/nixresolve). The daemon reads it at
// start; a reload that changes it is logged and takes effect at the next
// start.
type Nix struct {
	// Binary is the nix executable, a name on PATH or a path; "" = "nix".
	Binary string `json:"binary,omitempty"`
	// Offline passes --offline to nix: only what is already in the store
	// resolves.
	Offline bool `json:"offline,omitempty"`
	// Timeout bounds one resolution (lock, evaluate, build); nix is killed
	// on expiry. 0 = nixresolve.DefaultTimeout (2m).
	Timeout Duration `json:"timeout,omitempty"`
	// Config lines are appended to NIX_CONFIG for every nix process, e.g.
	// "substituters = https://cache.example.org".
	Config []string `json:"config,omitempty"`
	// Refresh says when resolved specs and captured environments move on
	// to what their refs name now: "never" (the default: only `mcpx nix
	// refresh`), "on-reload" (every config reload), or an interval such as
	// "1h". Servers whose program changed are drained and replaced.
	Refresh string `json:"refresh,omitempty"`
}

// Refresh policies (Nix.Refresh); anything else is an interval.
const (
	NixRefreshNever    = "never"
	NixRefreshOnReload = "on-reload"
)

// MinNixRefreshInterval is the shortest nix.refresh interval: each tick
// runs nix flake metadata and a build per spec in use.
const MinNixRefreshInterval = time.Second

// RefreshInterval is the interval of an interval policy; 0 otherwise.
func (n Nix) RefreshInterval() time.Duration {
	if n.Refresh == NixRefreshNever || n.Refresh == NixRefreshOnReload {
		return 0
	}
	d, _ := time.ParseDuration(n.Refresh)
	return d
}

// Records configures the call log: one JSON line per tool call under
// <state>/records (package mcpx.dev/mcpx/records), read by `mcpx stats`.
// The daemon reads it at start; a reload that changes it takes effect at
// the next start.
type Records struct {
	// Enabled turns the log on; nil (left out) = true. Normalize fills it.
	Enabled *bool `json:"enabled,omitempty"`
	// Bodies keeps each call's arguments and result in its record (each up
	// to calllog.BodyLimit). Off by default: they may hold secrets.
	Bodies bool `json:"bodies,omitempty"`
	// MaxBytes is the size at which a file is closed and the next begun.
	// 0 = calllog.DefaultMaxBytes (16 MiB).
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// MaxAge is how long records are kept. 0 = calllog.DefaultMaxAge (7 days).
	MaxAge Duration `json:"maxAge,omitempty"`
	// MaxFiles is how many files are kept; the directory holds about
	// MaxFiles × MaxBytes at most. 0 = calllog.DefaultMaxFiles (8).
	MaxFiles int `json:"maxFiles,omitempty"`
}

// Log configures the daemon's log: JSON records in <state>/logs (rotated
// by size, a few files kept; `mcpx log` reads them) and text on stderr.
// A record's level is its session's, else its server's, else the global
// one ($MCPX_LOG_LEVEL, else Level; with neither, debug to the file and
// info to stderr). The daemon reads it at start; a reload that changes it
// takes effect at the next start.
type Log struct {
	// Level is the lowest level logged, to the file and stderr: debug,
	// info, warn or error. "" = debug to the file, info to stderr.
	Level string `json:"level,omitempty"`
	// Servers sets a level per server, for the records that name it (its
	// children's stderr, spawns, crashes): {"github": "debug"}.
	Servers map[string]string `json:"servers,omitempty"`
	// Sessions sets a level per session, by its scope key, for the records
	// that name it; it wins over the server's: {"session:agent-7": "debug"}.
	Sessions map[string]string `json:"sessions,omitempty"`
	// MaxBytes is the size at which the current file is rotated.
	// 0 = 10 MiB.
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// MaxFiles is how many files are kept, the current one included.
	// 0 = 5.
	MaxFiles int `json:"maxFiles,omitempty"`
}

// LogLevels are the values of log.level, log.servers and log.sessions.
var LogLevels = []string{"debug", "info", "warn", "error"}

// On reports whether the call log is on.
func (r Records) On() bool { return r.Enabled == nil || *r.Enabled }

// DefaultMaxDepth is the nesting limit of a config that sets none. Real
// arguments nest a few levels (a list of objects of lists is 4); JSON Schema
// documents, the deepest real arguments seen, stay well under 32. 64 leaves
// room for those and is far below the ~1,000 at which the official go-sdk's
// decoder makes a child exit (and the 10,000 Go's encoding/json accepts),
// so one request cannot take a shared child offline.
const DefaultMaxDepth = 64

// DefaultCallTimeout is the call timeout of a server that sets none. The
// other defaults Parse, Normalize and Default fill in are those the pool,
// the call log and the resolver give a zero (pool.DefaultMax and the like),
// read from package mcpx.dev/mcpx/internal/defaults, where they are
// stated, so that `mcpx config show` prints what the pool will do.
const DefaultCallTimeout = 5 * time.Minute

// Parse reads a config document. source names it in errors (a path).
// mcpx's own format and those of MCP clients are read (see "Client formats"
// in the package doc). Every error names the server and the field and
// suggests the fix.
//
// The returned Config is normalized (see Normalize), with the document's
// warnings in Config.Warnings. On failure the error is an *Error holding
// every problem found, each a *Problem, and the warnings.
func Parse(data []byte, source string) (*Config, error) {
	var p problems
	cfg, order, inputs := p.decode(data)
	if cfg == nil {
		return nil, p.err(source)
	}
	cfg.Source = source
	p.checkPool(&cfg.Pool)
	p.checkLimits(&cfg.Limits)
	p.checkNix(&cfg.Nix)
	p.checkRecords(&cfg.Records)
	p.checkRegistry(&cfg.Registry)
	p.checkOTel(&cfg.OTel)
	p.checkPublic(&cfg.Public)
	rank := map[string]int{}
	usesInputs := false
	for i, d := range order {
		s := cfg.Servers[d.name]
		d.probs.checkServer(d.name, s, d.typ, &cfg.Pool, d.bad)
		p.merge(d.probs, d.disabled)
		usesInputs = usesInputs || s.usesInputs()
		if d.disabled {
			delete(cfg.Servers, d.name)
			cfg.Disabled = append(cfg.Disabled, d.name)
		}
		rank[d.name] = i + 1
	}
	p.checkAllocOverlap(cfg.Servers)
	p.checkServerNames(cfg.Servers)
	p.checkSandboxes(cfg)
	if inputs > 0 && !usesInputs {
		p.warn("", "inputs", "VS Code inputs ignored: no server uses them, and mcpx never prompts",
			"remove them, or keep them for VS Code")
	}
	p.groupByServer(rank)
	if err := p.err(source); err != nil {
		return nil, err
	}
	cfg.Warnings = p.warns
	return cfg, nil
}

// Load reads and parses the file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Problem{Op: "load config", Err: err,
			Msg:  fmt.Sprintf("config file %s does not exist", path),
			Hint: "create it, or leave out --config to serve the built-in demo server"}
	}
	if err != nil {
		return nil, &Problem{Op: "load config", Err: err,
			Msg: fmt.Sprintf("reading config file %s: %v", path, err)}
	}
	return Parse(data, path)
}

// Default is the config served when there is no config file: the
// built-in demo server, run as `<self> demo-server`, scoped to the worktree.
func Default(self string) *Config {
	c := &Config{Servers: map[string]*Server{
		"demo": {
			Command:     self,
			Args:        []string{"demo-server"},
			Scope:       ScopeWorktree,
			Description: "The built-in demo server: echo, add, sleep, progress, roots and failure tools.",
			Tags:        []string{"demo"},
		},
	}}
	if err := c.Normalize(); err != nil {
		panic("config: invalid default config: " + err.Error()) // a bug
	}
	return c
}

// Normalize checks c as Parse does and fills in the defaults: scope
// (worktree for command servers, global for url servers), sharing, max, the
// timeouts and the pool limits. It is for configs built in code; Parse
// has already normalized what it returns.
func (c *Config) Normalize() error {
	var p problems
	p.checkPool(&c.Pool)
	p.checkLimits(&c.Limits)
	p.checkNix(&c.Nix)
	p.checkRecords(&c.Records)
	p.checkRegistry(&c.Registry)
	p.checkOTel(&c.OTel)
	p.checkPublic(&c.Public)
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		if s := c.Servers[name]; s == nil {
			p.add(name, "", "no definition", "give it a command or a url")
		} else {
			p.checkServer(name, s, transport{}, &c.Pool, nil)
		}
	}
	p.checkAllocOverlap(c.Servers)
	p.checkServerNames(c.Servers)
	p.checkSandboxes(c)
	c.Warnings = p.warns
	return p.err(c.Source)
}

// IsScopeKind reports whether k names a scope.
func IsScopeKind(k ScopeKind) bool { return slices.Contains(scopeKinds, k) }

// ScopeNames lists the scope names, in the order of the scopes table.
func ScopeNames() []string {
	out := make([]string, len(scopeKinds))
	for i, k := range scopeKinds {
		out[i] = string(k)
	}
	return out
}

// ScopeKinds returns every scope kind, in the order of the table in
// docs/scopes.md. The caller owns the slice.
func ScopeKinds() []ScopeKind { return append([]ScopeKind(nil), scopeKinds...) }

// EnvironmentAuto is the environment of a child's (or a script's) own
// directory: its flake.nix's default devShell, else its shell.nix, else
// the host. For a server the directory is the child's working directory
// (its cwd, else its instance root); with neither, the host.
const EnvironmentAuto = "auto"

// EnvironmentIsolated is an environment generated to hold only the
// runtime (a nix: command, a nix: script.runtime) and the declared
// dependencies (nix: specs), built once by nix: the child's PATH is their
// bin directories, none of the host's (package nixresolve).
const EnvironmentIsolated = "isolated"
