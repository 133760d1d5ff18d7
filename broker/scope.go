package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mcpx.dev/mcpx/broker/internal/gitdir"
	"mcpx.dev/mcpx/config"
)

// CallContext is what a caller declares about itself, from the Mcpx-* headers.
type CallContext struct {
	Cwd           string // absolute path on the broker's machine; "" = not declared
	Session       string // Mcpx-Session
	ParentSession string // Mcpx-Parent-Session
	Lease         string // Mcpx-Lease: remote pid-style lifetime
	Pid           int    // Mcpx-Pid: only trusted from unix-socket callers; 0 = none
	CallID        string // unique per call; the broker assigns it
	Client        string // the caller's User-Agent, clipped; recorded with a session's creator
	// Scope is the scope the caller asks for (Mcpx-Scope) instead of the
	// server's configured one; "" = the configured one. The broker's
	// scopeFor decides whether the server's scopePolicy allows it.
	Scope config.ScopeKind
	// ScopeFrom is the kind of caller Scope came from, as it declares it
	// (Mcpx-Scope-From); "" = api. The scopePolicy may take overrides
	// from some kinds only.
	ScopeFrom config.CallerKind
}

// ResolvedScope is where a call lands.
type ResolvedScope struct {
	Key      string // e.g. "worktree:/src/app-wt1"
	Root     string // "" for global/session/pid/call scopes
	Degraded string // why the requested scope could not be used; "" if it was
}

// ResolverOptions configures a Resolver. The zero value is ready to use.
type ResolverOptions struct {
	// Logger receives one Info record per degraded key, with the reason
	// (per reason for call: keys, which are new on every call). nil = discard.
	Logger *slog.Logger
	// CeilingDirs stop git discovery the way GIT_CEILING_DIRECTORIES does:
	// the walk up from a cwd never moves into one of these directories
	// (a cwd that is one is still looked at). Absolute paths; relative ones
	// are ignored, as git ignores them. nil = walk to the filesystem root.
	CeilingDirs []string
	// Revalidate lets a cached git answer be trusted without re-stat'ing
	// its files for this long after it was last checked. 0 = check on
	// every hit: exact, one stat per directory level (~1 µs each on a
	// small VM). The broker uses a second: a `git init` or `git worktree
	// remove` is then noticed within a second instead of at once.
	Revalidate time.Duration
}

// Resolver maps a scope kind and what a caller declared to a key and a root;
// see "Scopes, keys and roots" in docs/scopes.md. It is the only
// resolution path.
//
//	r := broker.NewResolver(broker.ResolverOptions{Logger: log})
//	cwd, err := r.CanonicalCwd(header) // once per request, before authorization
//	...
//	rs := r.Resolve(config.ScopeWorktree, broker.CallContext{Cwd: cwd, CallID: id})
//	// rs.Key == "worktree:/src/app-wt1", rs.Root == "/src/app-wt1"
//
// Git layout is discovered natively (package gitdir: no git process) and
// cached per directory; every cache hit is revalidated with stat calls, so
// `git init`, `git worktree add/remove`, `rm -rf .git` and the like are
// noticed on the next call. A warm worktree resolution stats the worktree's
// .git entry, one .git per directory level between the cwd and the top
// level, and, for a main checkout or the repo scope, the repository's
// config; outside a repository, one .git per ancestor up to the root. The
// cwd and global scopes cost no system call. Caches are bounded. All methods are safe for
// concurrent use.
type Resolver struct {
	log        *slog.Logger
	ceilings   map[string]bool // read-only after NewResolver
	revalidate time.Duration

	cwds  scopeCache[*scopeCwd] // declared cwd -> its canonical form
	finds scopeCache[*gitFind]  // canonical dir -> where it lies in git
	repos scopeCache[*gitRepo]  // canonical common dir -> the repository

	logMu  sync.RWMutex
	logged map[scopeLogKey]bool // guarded by logMu: degradations already logged
}

// NewResolver returns a Resolver with empty caches.
func NewResolver(opts ResolverOptions) *Resolver {
	r := &Resolver{log: opts.Logger, logged: make(map[scopeLogKey]bool), revalidate: opts.Revalidate}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	for _, c := range opts.CeilingDirs {
		if !filepath.IsAbs(c) {
			continue
		}
		if r.ceilings == nil {
			r.ceilings = make(map[string]bool)
		}
		if p, err := filepath.EvalSymlinks(c); err == nil {
			c = p
		}
		r.ceilings[filepath.Clean(c)] = true
	}
	return r
}

// Degradation reasons: short, human, free of paths other than the caller's.
const (
	reasonNoCwd       = "no cwd declared"
	reasonRelCwd      = "cwd is not an absolute path"
	reasonBadCwd      = "cwd is not an existing directory"
	reasonNoRepo      = "not inside a git repository"
	reasonBrokenGit   = "broken .git file (it leads to no repository)"
	reasonBare        = "inside a bare repository (no worktree)"
	reasonInGitDir    = "inside a git directory (no worktree)"
	reasonNoSession   = "no session declared"
	reasonNoParent    = "no parent session or session declared"
	reasonNoPid       = "no pid or lease declared"
	reasonUnknownKind = "unknown scope kind"
)

// Resolve returns where a call of kind from cc lands. It never fails: a
// scope that cannot be honoured degrades, with ResolvedScope.Degraded
// saying why:
//
//   - repo and worktree outside a repository (or at a broken .git file)
//     fall to cwd:<dir>; worktree inside a bare repository or a .git
//     directory also does (repo does not: the repository is known). As in
//     git, a repository's core.worktree is the worktree of everything found
//     through its git directory (submodules set it), but not of its linked
//     worktrees;
//   - repo, worktree and cwd with no usable cwd fall to call:<CallID>;
//   - session with no session, parent-session with neither a parent nor a
//     session, pid with neither a lease nor a pid fall to call:<CallID>
//     (a lease, when declared, is preferred to the pid).
//     parent-session falling back to session:<id> is not a degradation: a
//     session with no parent is its own top-level session;
//   - an unknown kind resolves to call:<CallID>, the narrowest scope.
//
// cc.Cwd should come from CanonicalCwd; a symlinked or uncanonical path is
// canonicalised here too (cached, and rechecked with one stat per call).
// An already-canonical path is trusted without a stat: CanonicalCwd has
// just checked that it exists. cc.CallID should be set.
func (r *Resolver) Resolve(kind config.ScopeKind, cc CallContext) ResolvedScope {
	rs := r.resolve(kind, cc)
	if rs.Degraded != "" {
		r.noteDegraded(kind, rs)
	}
	return rs
}

func (r *Resolver) resolve(kind config.ScopeKind, cc CallContext) ResolvedScope {
	switch kind {
	case config.ScopeGlobal:
		return ResolvedScope{Key: globalKey}
	case config.ScopeCall:
		return callScope(cc, "")
	case config.ScopeSession:
		if cc.Session != "" {
			return ResolvedScope{Key: "session:" + cc.Session}
		}
		return callScope(cc, reasonNoSession)
	case config.ScopeParentSession:
		switch {
		case cc.ParentSession != "":
			return ResolvedScope{Key: "psession:" + cc.ParentSession}
		case cc.Session != "":
			return ResolvedScope{Key: "session:" + cc.Session}
		}
		return callScope(cc, reasonNoParent)
	case config.ScopePid:
		// A declared lease wins over the pid: it is asked for explicitly,
		// while the CLI always sends its parent's pid (under `mcpx lease
		// run` that is the leased command's shell, not the lifetime meant).
		switch {
		case cc.Lease != "":
			return ResolvedScope{Key: "lease:" + cc.Lease}
		case cc.Pid > 0:
			return ResolvedScope{Key: "pid:" + strconv.Itoa(cc.Pid)}
		}
		return callScope(cc, reasonNoPid)
	case config.ScopeCwd, config.ScopeRepo, config.ScopeWorktree:
		return r.resolveDir(kind, cc)
	}
	return callScope(cc, reasonUnknownKind)
}

func callScope(cc CallContext, reason string) ResolvedScope {
	return ResolvedScope{Key: "call:" + cc.CallID, Degraded: reason}
}

// resolveDir resolves the scopes that depend on the cwd. For repo, worktree
// and cwd the root is a function of the key alone.
func (r *Resolver) resolveDir(kind config.ScopeKind, cc CallContext) ResolvedScope {
	if cc.Cwd == "" {
		return callScope(cc, reasonNoCwd)
	}
	cw := r.cwd(cc.Cwd)
	if cw == nil {
		if !filepath.IsAbs(cc.Cwd) {
			return callScope(cc, reasonRelCwd)
		}
		return callScope(cc, reasonBadCwd)
	}
	here := ResolvedScope{Key: cw.key, Root: cw.path}
	if kind == config.ScopeCwd {
		return here
	}
	f := r.find(cw.path)
	if f == nil { // the directory went away since it was canonicalised
		r.cwds.del(cc.Cwd)
		return callScope(cc, reasonBadCwd)
	}
	switch f.Kind {
	case gitdir.Outside:
		here.Degraded = reasonNoRepo
		return here
	case gitdir.Broken:
		here.Degraded = reasonBrokenGit
		return here
	}
	if kind == config.ScopeRepo {
		g := r.repo(f)
		return ResolvedScope{Key: g.key, Root: g.Root}
	}
	if f.GitDir != f.CommonDir { // a linked worktree, or inside a linked worktree's git dir
		if f.Kind == gitdir.InGitDir {
			here.Degraded = reasonInGitDir
			return here
		}
		return ResolvedScope{Key: f.worktreeKey, Root: f.Top}
	}
	// Found through the common dir itself: its config may say there is no
	// worktree (core.bare) or where it is (core.worktree), as git reads it.
	switch g := r.repo(f); {
	case g.Bare:
		here.Degraded = reasonBare
	case g.Worktree != "":
		return ResolvedScope{Key: g.worktreeKey, Root: g.Worktree}
	case f.Kind == gitdir.InGitDir:
		here.Degraded = reasonInGitDir
	default:
		return ResolvedScope{Key: f.worktreeKey, Root: f.Top}
	}
	return here
}

// CanonicalCwd checks a declared cwd and returns its canonical form:
// absolute, clean, symlinks resolved, an existing directory. Errors are
// *Error{Kind: KindBadRequest, Field: "Mcpx-Cwd"}. Answers are cached per
// declared path and rechecked with one stat: the directory must still be
// the same one (so a repointed symlink or a removed directory is noticed).
func (r *Resolver) CanonicalCwd(cwd string) (string, error) {
	if !filepath.IsAbs(cwd) {
		return "", cwdError(fmt.Sprintf("cwd %q is not an absolute path", cwd), nil)
	}
	if c, ok := r.cwds.get(cwd); ok {
		if fi, err := os.Stat(cwd); err == nil && fi.IsDir() && os.SameFile(fi, c.fi) {
			return c.path, nil
		}
	}
	c, err := r.canonicalize(cwd)
	if err != nil {
		return "", err
	}
	return c.path, nil
}

// scopeCwd is a declared cwd, canonicalised. Immutable once built.
type scopeCwd struct {
	path string      // canonical
	key  string      // "cwd:" + path
	fi   os.FileInfo // the directory, to notice it being replaced
	same bool        // the declared path was already canonical
}

// cwd returns the canonical form of a declared cwd, nil if it is not an
// existing absolute directory.
func (r *Resolver) cwd(raw string) *scopeCwd {
	if c, ok := r.cwds.get(raw); ok {
		if c.same {
			return c
		}
		if fi, err := os.Stat(raw); err == nil && fi.IsDir() && os.SameFile(fi, c.fi) {
			return c
		}
	}
	c, err := r.canonicalize(raw)
	if err != nil {
		return nil
	}
	return c
}

// canonicalize resolves cwd from scratch and caches the answer.
func (r *Resolver) canonicalize(cwd string) (*scopeCwd, error) {
	if !filepath.IsAbs(cwd) {
		return nil, cwdError(fmt.Sprintf("cwd %q is not an absolute path", cwd), nil)
	}
	p, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		r.cwds.del(cwd)
		if errors.Is(err, fs.ErrPermission) {
			return nil, cwdError(fmt.Sprintf("cwd %q is not accessible to the broker", cwd), err)
		}
		return nil, cwdError(fmt.Sprintf("cwd %q does not exist on the broker's machine", cwd), err)
	}
	p = filepath.Clean(p)
	fi, err := os.Stat(p)
	if err != nil {
		r.cwds.del(cwd)
		return nil, cwdError(fmt.Sprintf("cwd %q does not exist on the broker's machine", cwd), err)
	}
	if !fi.IsDir() {
		r.cwds.del(cwd)
		return nil, cwdError(fmt.Sprintf("cwd %q is not a directory", cwd), nil)
	}
	c := &scopeCwd{path: p, key: "cwd:" + p, fi: fi, same: p == cwd}
	r.cwds.put(cwd, c)
	return c, nil
}

func cwdError(msg string, err error) *Error {
	return &Error{
		Kind:  KindBadRequest,
		Op:    "resolve cwd",
		Field: "Mcpx-Cwd",
		Msg:   msg,
		Hint:  "send an absolute path to a directory that exists on the broker's machine",
		Err:   err,
	}
}

// gitFind is a discovery answer as the resolver caches it, per canonical
// directory. Immutable once built, but for checked.
type gitFind struct {
	*gitdir.Dir
	worktreeKey string // "worktree:" + Top, built once so a warm Resolve allocates nothing for it
	// checked is when the answer was last found valid (unix ns), for
	// ResolverOptions.Revalidate.
	checked int64 // accessed atomically
}

// gitRepo is a repository as the resolver caches it, per canonical common
// dir. Immutable once built, but for checked.
type gitRepo struct {
	*gitdir.Repo
	key         string // "repo:" + the common dir
	worktreeKey string // "worktree:" + Worktree, when that is set
	checked     int64  // accessed atomically: as gitFind.checked
}

// fresh reports whether a cached answer still holds: checked within the
// revalidation window, or valid when checked again now.
func (r *Resolver) fresh(checked *int64, valid func() bool) bool {
	if r.revalidate <= 0 {
		return valid()
	}
	now := time.Now().UnixNano()
	if now-atomic.LoadInt64(checked) < int64(r.revalidate) {
		return true
	}
	if !valid() {
		return false
	}
	atomic.StoreInt64(checked, now)
	return true
}

// find returns where the canonical directory dir lies in git, nil if it is
// no longer a directory.
func (r *Resolver) find(dir string) *gitFind {
	if f, ok := r.finds.get(dir); ok && r.fresh(&f.checked, f.Valid) {
		return f
	}
	d := gitdir.Discover(dir, r.ceilings)
	if d == nil {
		r.finds.del(dir)
		return nil
	}
	// Just discovered: as good as checked.
	f := &gitFind{Dir: d, checked: time.Now().UnixNano()}
	if d.Kind == gitdir.Worktree {
		f.worktreeKey = "worktree:" + d.Top
	}
	r.finds.put(dir, f)
	return f
}

// repo returns the repository f lies in.
func (r *Resolver) repo(f *gitFind) *gitRepo {
	if g, ok := r.repos.get(f.CommonDir); ok && r.fresh(&g.checked, g.Valid) {
		return g
	}
	g := &gitRepo{Repo: gitdir.ReadRepo(f.CommonDir, f.MainTop), key: "repo:" + f.CommonDir, checked: time.Now().UnixNano()}
	if g.Worktree != "" {
		g.worktreeKey = "worktree:" + g.Worktree
	}
	r.repos.put(f.CommonDir, g)
	return g
}

// scopeLogKey identifies a logged degradation: per key and reason, except
// call: keys (new on every call), which are logged once per kind and reason.
type scopeLogKey struct {
	kind   config.ScopeKind
	key    string
	reason string
}

func (r *Resolver) noteDegraded(kind config.ScopeKind, rs ResolvedScope) {
	k := scopeLogKey{key: rs.Key, reason: rs.Degraded}
	if strings.HasPrefix(rs.Key, "call:") {
		k = scopeLogKey{kind: kind, key: "call:", reason: rs.Degraded}
	}
	r.logMu.RLock()
	seen := r.logged[k]
	r.logMu.RUnlock()
	if seen {
		return
	}
	r.logMu.Lock()
	seen = r.logged[k]
	if !seen {
		if len(r.logged) >= scopeCacheMax {
			clear(r.logged) // bounded: past this many, some are logged again
		}
		r.logged[k] = true
	}
	r.logMu.Unlock()
	if !seen {
		r.log.Info("scope degraded", "scope", string(kind), "key", rs.Key, "reason", rs.Degraded)
	}
}

// scopeCacheMax bounds each of the resolver's caches. Callers choose the
// cwds, so the caches must not grow without limit.
const scopeCacheMax = 4096

// scopeCache is a bounded map safe for concurrent use. When full, an
// arbitrary entry makes room (map iteration order is randomised).
type scopeCache[V any] struct {
	mu sync.RWMutex
	m  map[string]V // guarded by mu
}

func (c *scopeCache[V]) get(k string) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

func (c *scopeCache[V]) put(k string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]V)
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= scopeCacheMax {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = v
}

func (c *scopeCache[V]) del(k string) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}
