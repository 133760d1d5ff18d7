// Package config reads and checks mcpx's config file: the servers it may
// start, their scopes and limits, and the pool's limits.
//
//	cfg, err := config.Load(path) // or config.Parse(data, source)
//	if err != nil {
//		fmt.Println(err) // every problem, each naming the server and field
//	}
//	b, err := broker.New(broker.Options{Config: cfg})
//
// Both the {"servers": {...}} shape and the {"mcpServers": {...}} one of
// Claude Desktop, Cursor and VS Code are read. Every problem names the
// server and the field and suggests the fix, with a "did you mean" for
// misspelt names. Strings keep their ${mcpx.root} and ${mcpx.cwd}
// placeholders (see package mcpx.dev/mcpx/internal/placeholder); the pool
// substitutes them at spawn time. Defaults are filled in, so a parsed
// Config says exactly what will run.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"
)

// Config is the daemon owner's configuration. The zero Config has no servers;
// Default returns the one served when no config file exists.
type Config struct {
	// Servers by name. Names are [A-Za-z0-9_-]+ (they appear in URLs and in
	// "server.tool" CLI arguments).
	Servers map[string]*Server `json:"servers"`
	Pool    Pool               `json:"pool"`
	Limits  Limits             `json:"limits"`
	// CeilingDirs stop git discovery from walking up into them, like
	// GIT_CEILING_DIRECTORIES: with a dotfiles repository at ~/.git, list
	// your home directory here, or every directory under it that is not
	// a repository of its own resolves to the home "worktree". Absolute.
	CeilingDirs []string `json:"ceilingDirs,omitempty"`
	// Source is the file the config was read from ("" for the built-in one).
	Source string `json:"-"`
}

// Server is one child MCP server. Exactly one of Command or URL is set.
// String fields keep ${mcpx.root}/${mcpx.cwd} placeholders; they are
// substituted at spawn time only.
type Server struct {
	Name string `json:"-"` // the key in Config.Servers

	// stdio child
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"` // "" = the instance root, else unset

	// streamable-HTTP child
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`

	Scope        ScopeKind `json:"scope,omitempty"`        // "" = worktree for command servers, global for url servers
	Sharing      Sharing   `json:"sharing,omitempty"`      // "" = shared
	Max          int       `json:"max,omitempty"`          // instances of this server; 0 = pool.DefaultMax
	IdleTimeout  Duration  `json:"idleTimeout,omitempty"`  // 0 = Config.Pool.IdleTimeout
	CallTimeout  Duration  `json:"callTimeout,omitempty"`  // 0 = DefaultCallTimeout
	StartTimeout Duration  `json:"startTimeout,omitempty"` // 0 = pool.DefaultStartTimeout; spawn + initialize
	Tags         []string  `json:"tags,omitempty"`
	Description  string    `json:"description,omitempty"`
}

// Sharing says how concurrent callers with the same key use one instance.
type Sharing string

const (
	SharingShared    Sharing = "shared"    // many callers multiplexed on one child
	SharingExclusive Sharing = "exclusive" // one caller at a time; others wait until their deadline
)

// ScopeKind names how callers are grouped onto instances. See the table in
// docs/architecture.md: the kind decides the key and the root. The broker's
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
	IdleTimeout  Duration `json:"idleTimeout,omitempty"`  // 0 = pool.DefaultIdleTimeout
	ReapInterval Duration `json:"reapInterval,omitempty"` // 0 = pool.DefaultReapInterval
}

// Limits bound what callers and children may send the daemon.
type Limits struct {
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
}

// DefaultCallTimeout is the call timeout of a server that sets none. The
// other defaults Parse, Normalize and Default fill in are the pool's own
// (pool.DefaultMax and the like), so that `mcpx config show` prints what
// the pool will do.
const DefaultCallTimeout = 5 * time.Minute

// Parse reads a config document. source names it in errors (a path).
// Both {"servers": {...}} and the {"mcpServers": {...}} shape used by Claude
// Desktop, Cursor and VS Code are accepted. Every error names the server and
// the field and suggests the fix.
//
// The returned Config is normalized (see Normalize). On failure the error is
// an *Error holding every problem found, each a *Problem.
func Parse(data []byte, source string) (*Config, error) {
	var p problems
	cfg, order := p.decode(data)
	if cfg == nil {
		return nil, p.err(source)
	}
	cfg.Source = source
	p.checkPool(&cfg.Pool)
	p.checkLimits(&cfg.Limits)
	rank := map[string]int{}
	for i, d := range order {
		p.checkServer(d.name, cfg.Servers[d.name], d.typ, &cfg.Pool, d.bad)
		rank[d.name] = i + 1
	}
	p.groupByServer(rank)
	if err := p.err(source); err != nil {
		return nil, err
	}
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
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		if s := c.Servers[name]; s == nil {
			p.add(name, "", "no definition", "give it a command or a url")
		} else {
			p.checkServer(name, s, "", &c.Pool, nil)
		}
	}
	return p.err(c.Source)
}
