package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/pool"
)

// A session, to the API, is the set of instances sharing one caller-owned
// key: session:, psession:, lease: or pid: ("Scopes, keys and roots" in
// docs/scopes.md). Directory and global keys are shared by design and
// belong to no caller (they are listed by Instances); call: keys live for
// one call.
var sessionPrefixes = []string{"session:", "psession:", "lease:", "pid:"}

// sessionScope names the scope a caller-owned key comes from.
func sessionScope(key string) (string, bool) {
	for i, p := range sessionPrefixes {
		if strings.HasPrefix(key, p) {
			return []string{"session", "parent-session", "lease", "pid"}[i], true
		}
	}
	return "", false
}

// Creator is who made a session: the caller of its first call.
type Creator struct {
	Name  string // the caller's name (Caller.Name)
	Via   string // how it reached the broker (Caller.Via)
	Owner bool   // the daemon's own user
	Host  string // the machine it ran on, when known: the broker's own for local callers
	Cwd   string // its declared cwd, canonical
	// Pid is its process (Mcpx-Pid, a local caller's only); User the
	// login name of a local caller's uid; ParentSession the
	// Mcpx-Parent-Session it declared; Client its User-Agent (the mcpx
	// CLI and Go client send mcpx/<version>).
	Pid           int
	User          string
	ParentSession string
	Client        string
}

// Session is one caller-owned key and its instances.
type Session struct {
	Key         string
	Scope       string        // "session", "parent-session", "lease" or "pid"
	Name        string        // set with SetSession: a named session outlives its creator
	IdleTimeout time.Duration // set with SetSession; 0 = each server's own
	Creator     Creator
	Created     time.Time // the first instance's creation
	LastUsed    time.Time // the latest of its instances'
	Calls       int64     // over its running instances
	Instances   []Instance
	// History is who attached to it and how each detached, oldest first
	// (sessionhist.go); Dropped counts older entries let go.
	History []Attachment
	Dropped int
}

// SessionSettings are what SetSession changes; nil fields stay as they are.
type SessionSettings struct {
	Name        *string        // "" clears it
	IdleTimeout *time.Duration // 0 clears it
}

// MaxSessionIdleTimeout bounds a session's own idle timeout.
const MaxSessionIdleTimeout = 7 * 24 * time.Hour

// sessionMeta is what the broker knows of a key beyond its instances.
type sessionMeta struct {
	creator Creator
	name    string
	idle    time.Duration
	history []Attachment // the newest maxAttachments
	dropped int          // attachments let go before them
}

// sessionRegistry holds sessionMeta by key. Its methods take only its own
// lock, so the pool may call them (KeyAlive, KeyIdleTimeout) with its lock
// held; nothing here calls the pool.
type sessionRegistry struct {
	mu   sync.Mutex
	m    map[string]*sessionMeta // guarded by mu
	seen uint64                  // guarded by mu; the last pool event syncHistory read
}

// maxSessionMeta bounds the registry; past it, entries of keys with no
// instance are dropped.
const maxSessionMeta = 4096

// note records key's creator, once. live lists the keys with instances, for
// pruning; it is read only when the registry is full.
func (r *sessionRegistry) note(key string, cr Creator, live func() map[string]bool) {
	r.mu.Lock()
	_, ok := r.m[key]
	full := len(r.m) >= maxSessionMeta
	r.mu.Unlock()
	if ok {
		return
	}
	var keep map[string]bool
	if full {
		keep = live() // outside r.mu: the pool calls the registry with its own lock held
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if keep != nil {
		for k, m := range r.m {
			if !keep[k] && m.name == "" {
				delete(r.m, k)
			}
		}
	}
	if _, ok := r.m[key]; !ok {
		r.m[key] = &sessionMeta{creator: cr}
	}
}

func (r *sessionRegistry) get(key string) (sessionMeta, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.m[key]
	if m == nil {
		return sessionMeta{}, false
	}
	c := *m
	c.history = slices.Clone(m.history)
	return c, true
}

// named reports whether key's session has a name: its instances outlive
// their creator (a dead pid, an ended lease) and idle out by their timeout.
func (r *sessionRegistry) named(key string) bool {
	m, _ := r.get(key)
	return m.name != ""
}

func (r *sessionRegistry) idleTimeout(key string) time.Duration {
	m, _ := r.get(key)
	return m.idle
}

// keyAlive is the pool's KeyAlive hook: whether a caller-owned key still
// has its owner. A named session always has; a lease key while its lease is
// live; a pid key while the process exists.
func (b *Broker) keyAlive(key string) bool {
	if b.sessions.named(key) {
		return true
	}
	if isLeaseKey(key) {
		return b.leases.alive(key)
	}
	return keyAlive(key)
}

// noteSession records the creator of a caller-owned key on its first call,
// and the caller's process as attached to it (sessionhist.go).
func (b *Broker) noteSession(key string, c Caller, cc CallContext) {
	if _, ok := sessionScope(key); !ok {
		return
	}
	defer func() {
		b.syncReaps()
		b.sessions.attachKey(key, cc.Pid, cc.Cwd, b.leases.now())
	}()
	if _, known := b.sessions.get(key); known {
		return
	}
	cr := Creator{Name: c.Name, Via: c.Via, Owner: c.Owner, Cwd: cc.Cwd, Pid: cc.Pid, ParentSession: cc.ParentSession, Client: cc.Client}
	if c.Local || c.Via == "tcp-loopback" {
		cr.Host = hostname
	}
	if c.Local {
		cr.User = userName(c.Uid)
	}
	b.sessions.note(key, cr, func() map[string]bool {
		live := map[string]bool{}
		for _, in := range b.pool.Instances() {
			live[in.Key] = true
		}
		return live
	})
}

var hostname, _ = os.Hostname()

// mayManageSession reports whether c may see and change the session meta
// describes: an admin any, another caller only those it created (the same
// name, and the same side of the owner line, so that a remote caller named
// like a local one is not taken for it; off the owner's side, the same way
// in too, so a token whose subject is a tailnet login's name is not that
// login). Deny by default: a key with no record is the admin's alone.
func mayManageSession(c Caller, meta sessionMeta, known bool) bool {
	if c.Rights.Admin() {
		return true
	}
	return known && meta.creator.Name == c.Name && meta.creator.Owner == c.Owner &&
		(c.Owner || meta.creator.Via == c.Via)
}

// Sessions lists the sessions c may see, sorted by key.
func (b *Broker) Sessions(c Caller) []Session {
	b.syncHistory()
	byKey := map[string][]Instance{}
	for _, in := range b.Instances() {
		if _, ok := sessionScope(in.Key); ok {
			byKey[in.Key] = append(byKey[in.Key], in)
		}
	}
	out := []Session{}
	for key, ins := range byKey {
		if s, ok := b.session(c, key, ins); ok {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Session) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// session builds key's Session from its instances, if c may see it.
func (b *Broker) session(c Caller, key string, ins []Instance) (Session, bool) {
	meta, known := b.sessions.get(key)
	if len(ins) == 0 || !mayManageSession(c, meta, known) {
		return Session{}, false
	}
	scope, _ := sessionScope(key)
	s := Session{Key: key, Scope: scope, Name: meta.name, IdleTimeout: meta.idle, Creator: meta.creator, Instances: ins,
		History: meta.history, Dropped: meta.dropped}
	for _, in := range ins {
		if s.Created.IsZero() || in.Created.Before(s.Created) {
			s.Created = in.Created
		}
		if in.LastUsed.After(s.LastUsed) {
			s.LastUsed = in.LastUsed
		}
		s.Calls += in.Calls
	}
	return s, true
}

// sessionInstances returns key's running instances.
func (b *Broker) sessionInstances(key string) []Instance {
	var out []Instance
	for _, in := range b.Instances() {
		if in.Key == key {
			out = append(out, in)
		}
	}
	return out
}

// Session describes one session, by its key or its name (SessionKey);
// KindNotFound if there is none that c may see (another caller's sessions
// do not exist to it).
func (b *Broker) Session(c Caller, ref string) (Session, error) {
	return b.sessionByRef(c, ref, "show session")
}

func (b *Broker) sessionByRef(c Caller, ref, op string) (Session, error) {
	b.syncHistory()
	key, err := b.SessionKey(c, ref, op)
	if err != nil {
		return Session{}, err
	}
	s, ok := b.session(c, key, b.sessionInstances(key))
	if !ok {
		return Session{}, sessionNotFound(op, ref)
	}
	return s, nil
}

func sessionNotFound(op, ref string) *Error {
	return &Error{Kind: KindNotFound, Op: op, Field: "key",
		Msg:  fmt.Sprintf("no session %q", ref),
		Hint: "`mcpx sessions ls` lists yours by key and name (session:, psession:, lease: and pid: keys with running instances)"}
}

// StopSession drains and stops every instance of c's session, named by its
// key or its name.
func (b *Broker) StopSession(ctx context.Context, c Caller, ref string) error {
	s, err := b.sessionByRef(c, ref, "stop session")
	if err != nil {
		return err
	}
	b.sessions.detachKey(s.Key, DetachKilled, b.leases.now())
	return b.stopInstances(ctx, s.Instances, "stop session")
}

func (b *Broker) stopInstances(ctx context.Context, ins []Instance, op string) error {
	var errs []error
	for _, in := range ins {
		if err := b.pool.Stop(ctx, in.ID); err != nil && !errors.Is(err, pool.ErrNotFound) {
			errs = append(errs, err) // gone meanwhile is stopped enough
		}
	}
	return b.translate(errors.Join(errs...), op, "")
}

// SetSession names a session (by its key or its present name) or sets its
// idle timeout. A named session outlives its creator's process or lease:
// its instances stop when idle for its timeout (its own, else each
// server's). A name is unique among the running sessions c may see.
func (b *Broker) SetSession(c Caller, ref string, set SessionSettings) (Session, error) {
	if set.Name != nil {
		if err := checkSessionName(*set.Name); err != nil {
			return Session{}, err
		}
	}
	if d := set.IdleTimeout; d != nil && (*d < 0 || *d > MaxSessionIdleTimeout) {
		return Session{}, &Error{Kind: KindBadRequest, Op: "set session", Field: "idleTimeout",
			Msg:  fmt.Sprintf("idleTimeout %s is outside [0, %s]", *d, MaxSessionIdleTimeout),
			Hint: "use a duration such as \"1h\"; 0 returns to each server's own idle timeout"}
	}
	cur, err := b.sessionByRef(c, ref, "set session")
	if err != nil {
		return Session{}, err
	}
	key := cur.Key
	if set.Name != nil {
		if err := b.claimName(c, key, *set.Name); err != nil {
			return Session{}, err
		}
	}
	b.sessions.mu.Lock()
	m := b.sessions.m[key]
	if m == nil { // only an admin gets here for a key with no record
		m = &sessionMeta{}
		b.sessions.m[key] = m
	}
	if set.Name != nil {
		m.name = *set.Name
	}
	if set.IdleTimeout != nil {
		m.idle = *set.IdleTimeout
	}
	b.sessions.mu.Unlock()
	return b.sessionByRef(c, key, "set session")
}

// checkSessionName refuses a name that is no label: too long, unprintable,
// or shaped like a key (which would hide a session's key wherever a key or
// a name is taken).
func checkSessionName(n string) error {
	hint := "pick a short label such as \"build-cache\""
	if len(n) > 128 || strings.ContainsFunc(n, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return &Error{Kind: KindBadRequest, Op: "set session", Field: "name",
			Msg: "a session name is at most 128 printable characters", Hint: hint}
	}
	if _, key := sessionScope(n); key {
		return &Error{Kind: KindBadRequest, Op: "set session", Field: "name",
			Msg:  fmt.Sprintf("session name %q starts as a key does (%s): it would hide that key", n, strings.Join(sessionPrefixes, " ")),
			Hint: hint}
	}
	return nil
}

// AcquireLease gives c a lease for ttl (0 = DefaultLeaseTTL; at most
// MaxLeaseTTL). Calls that send its ID as Mcpx-Lease land pid-scoped
// servers on lease:<id> instances, which stop when it ends.
func (b *Broker) AcquireLease(c Caller, ttl time.Duration) (Lease, error) {
	return b.leases.acquire(c, ttl)
}

// RenewLease extends c's lease (an admin's: anyone's, by its full id) by
// ttl, 0 = its own ttl. KindNotFound once it has expired.
func (b *Broker) RenewLease(c Caller, id string, ttl time.Duration) (Lease, error) {
	return b.leases.renew(id, c, ttl)
}

// ReleaseLease ends c's lease and stops its instances at once (draining
// their calls, bounded by ctx), unless its session was named.
func (b *Broker) ReleaseLease(ctx context.Context, c Caller, id string) error {
	key, err := b.leases.release(id, c)
	if err != nil {
		return err
	}
	b.sessions.detachKey(key, DetachReleased, b.leases.now())
	if b.sessions.named(key) {
		return nil
	}
	return b.stopInstances(ctx, b.sessionInstances(key), "release lease")
}

// scopeFor is the one place a request's scope kind is decided: the
// server's configured scope, or the caller's Mcpx-Scope override when the
// server's scopePolicy allows it — the scope, and the kind of caller it
// came from (from: Mcpx-Scope-From, "" = api) — and pool.scopePolicy, if
// set, allows it too (a project file's server cannot open more than the
// owner did). A refused override is an error naming the server, the kind
// and the setting to change, never a silent fall back to the configured
// scope.
func scopeFor(server string, def *config.Server, requested config.ScopeKind, from config.CallerKind, bound *config.ScopePolicy) (config.ScopeKind, error) {
	if requested == "" || requested == def.Scope {
		return def.Scope, nil
	}
	if !config.IsScopeKind(requested) {
		return "", &Error{Kind: KindBadRequest, Op: "resolve scope", Server: server, Field: "Mcpx-Scope",
			Msg:  fmt.Sprintf("Mcpx-Scope %q is not a scope", requested),
			Hint: "scopes: " + strings.Join(config.ScopeNames(), ", ")}
	}
	from = cmp.Or(from, config.CallerAPI)
	sp := def.ScopePolicy
	switch {
	case !sp.AllowOverride:
		return "", &Error{Kind: KindForbidden, Op: "resolve scope", Server: server, Field: "scopePolicy.allowOverride",
			Msg:  fmt.Sprintf("the server's scope is %q and its scopePolicy.allowOverride is false, so Mcpx-Scope %q is refused", def.Scope, requested),
			Hint: "drop Mcpx-Scope (--scope), or have the daemon's owner set scopePolicy.allowOverride for this server"}
	case !sp.AllowsFrom(from):
		return "", &Error{Kind: KindForbidden, Op: "resolve scope", Server: server, Field: "scopePolicy.allowOverride",
			Msg: fmt.Sprintf("Mcpx-Scope %q came from a caller of kind %q, and the server's scopePolicy.allowOverride takes overrides only from %s",
				requested, from, sp.OverrideText()),
			Hint: fmt.Sprintf("ask through one of those, or have the daemon's owner add %q to servers.%s.scopePolicy.allowOverride", from, server)}
	case !sp.Allows(def.Scope, requested):
		return "", &Error{Kind: KindForbidden, Op: "resolve scope", Server: server, Field: "scopePolicy.allow",
			Msg:  fmt.Sprintf("Mcpx-Scope %q is not in the server's scopePolicy.allow (%s)", requested, scopeList(sp.Allow)),
			Hint: "ask for one of the allowed scopes, or drop Mcpx-Scope"}
	}
	if bound == nil {
		return requested, nil
	}
	switch {
	case !bound.AllowsFrom(from):
		return "", &Error{Kind: KindForbidden, Op: "resolve scope", Server: server, Field: "pool.scopePolicy.allowOverride",
			Msg: fmt.Sprintf("Mcpx-Scope %q came from a caller of kind %q, and pool.scopePolicy.allowOverride, which bounds every server's, takes overrides only from %s",
				requested, from, bound.OverrideText()),
			Hint: fmt.Sprintf("ask through one of those, or have the daemon's owner add %q to pool.scopePolicy.allowOverride in the daemon's config", from)}
	case !bound.Allows("", requested):
		return "", &Error{Kind: KindForbidden, Op: "resolve scope", Server: server, Field: "pool.scopePolicy.allow",
			Msg:  fmt.Sprintf("Mcpx-Scope %q is not in pool.scopePolicy.allow (%s), which bounds every server's", requested, scopeList(bound.Allow)),
			Hint: fmt.Sprintf("ask for one of those scopes, or have the daemon's owner add %q to pool.scopePolicy.allow in the daemon's config", requested)}
	}
	return requested, nil
}

func scopeList(ks []config.ScopeKind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
