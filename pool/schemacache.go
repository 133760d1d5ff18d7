package pool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool/execid"
)

// The schema cache remembers what the children of one effective
// definition said about themselves: the protocol era they speak, their
// initialize (or server/discover) answer with its instructions, and their
// tools, prompts, resources and resource templates lists. It is keyed by
// the instance's effective definition — the server's fields after
// ${mcpx.*} substitution, the instance root, and the identity of the
// executable the child runs (package execid) — so two instances that
// differ only by root never share an entry, and a changed program is a new
// key. It serves two things:
//
//   - the era: a restarted daemon opens a child straight with its era,
//     without a server/discover probe a handshake-era child refuses;
//   - listings without a child: ToolListing answers for an instance that
//     is not running (after a daemon restart, after an idle reap) from the
//     entry, without starting a child. The entry is as fresh as the last
//     child of that key left it: a running child's list_changed refreshes
//     it, nothing else does until a call starts a child again.
//
// It is one JSON file in the state directory, written atomically (mode
// 0600) by one goroutine after changes; bounded in entries and bytes, the
// least recently used entries going first. A file that cannot be read, is
// not JSON, or is of another version is treated as empty (one log line)
// and rewritten.

// Schema cache bounds.
const (
	DefaultSchemaCacheEntries = 256
	DefaultSchemaCacheBytes   = 32 << 20
)

// schemaVersion changes when what the cache file means changes; a file of
// another version is ignored.
const schemaVersion = 1

// schemaEntry is what one effective definition's children said.
type schemaEntry struct {
	Server    string          `json:"server"`
	Era       string          `json:"era"` // client.EraStateless or EraHandshake
	Protocol  string          `json:"protocolVersion"`
	Init      json.RawMessage `json:"init,omitempty"` // the initialize (or discover) result
	Tools     json.RawMessage `json:"tools,omitempty"`
	Prompts   json.RawMessage `json:"prompts,omitempty"`
	Resources json.RawMessage `json:"resources,omitempty"`
	Templates json.RawMessage `json:"resourceTemplates,omitempty"`
	Used      time.Time       `json:"used"`
}

func (e *schemaEntry) size() int {
	return len(e.Init) + len(e.Tools) + len(e.Prompts) + len(e.Resources) + len(e.Templates) + 256
}

type schemaDoc struct {
	Version int                     `json:"version"`
	Entries map[string]*schemaEntry `json:"entries"`
}

// schemaCache is safe for concurrent use. A nil *schemaCache keeps nothing.
type schemaCache struct {
	path       string // "" = in memory only
	log        *slog.Logger
	maxEntries int
	maxBytes   int
	now        func() time.Time

	mu      sync.Mutex
	entries map[string]*schemaEntry // guarded by mu; entries are replaced, never modified
	dirty   bool                    // guarded by mu
	kick    chan struct{}           // buffered 1: the writer has work
}

func loadSchemaCache(path string, log *slog.Logger, now func() time.Time) *schemaCache {
	c := &schemaCache{path: path, log: log, maxEntries: DefaultSchemaCacheEntries, maxBytes: DefaultSchemaCacheBytes,
		now: now, entries: map[string]*schemaEntry{}, kick: make(chan struct{}, 1)}
	var doc schemaDoc
	if !loadVersioned(path, schemaVersion, &doc, &doc.Version, log, "the schema cache file") {
		return c
	}
	for k, e := range doc.Entries {
		if e != nil {
			c.entries[k] = e
		}
	}
	return c
}

// schemaKey names an instance's effective definition: sp is def after
// substitution for that instance (before Options.Resolve), exec the
// identity of the program it runs ("" for url servers).
func schemaKey(def *Server, root string, sp spawnSpec, exec string) string {
	b, _ := json.Marshal(struct {
		Name, Command, Cwd, URL, Root, Exec, Environment string
		Args, Env, Inherit                               []string
		InheritAll                                       bool
		Headers                                          map[string]string
		Adapter                                          string `json:",omitempty"` // a child's key is as it was
	}{def.Name, sp.command, sp.cwd, sp.url, root, exec, def.Environment, sp.args, sp.env, sp.inherit, sp.inheritAll, sp.headers, adapterIdentity(def)})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// get returns key's entry (nil if none) and marks it used.
func (c *schemaCache) get(key string) *schemaEntry {
	if c == nil || key == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e != nil {
		cp := *e
		cp.Used = c.now()
		c.entries[key] = &cp
	}
	return e
}

// update replaces key's entry with what fn makes of a copy of it (a zero
// entry if none), then schedules a write.
func (c *schemaCache) update(key string, fn func(e *schemaEntry)) {
	if c == nil || key == "" {
		return
	}
	c.mu.Lock()
	var e schemaEntry
	if old := c.entries[key]; old != nil {
		e = *old
	}
	fn(&e)
	e.Used = c.now()
	c.entries[key] = &e
	c.evictLocked()
	c.dirty = true
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// evictLocked drops the least recently used entries beyond the bounds.
func (c *schemaCache) evictLocked() {
	total := 0
	for _, e := range c.entries {
		total += e.size()
	}
	if len(c.entries) <= c.maxEntries && total <= c.maxBytes {
		return
	}
	keys := make([]string, 0, len(c.entries))
	for k := range c.entries {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return c.entries[a].Used.Compare(c.entries[b].Used) })
	for _, k := range keys {
		if len(c.entries) <= c.maxEntries && total <= c.maxBytes {
			break
		}
		total -= c.entries[k].size()
		delete(c.entries, k)
	}
}

// run writes the file after changes until ctx ends, then once more.
func (c *schemaCache) run(ctx context.Context) {
	for {
		select {
		case <-c.kick:
			c.flush()
		case <-ctx.Done():
			c.flush()
			return
		}
	}
}

// flush writes the file if it changed: a temp file (0600) renamed over it.
// A failure costs only the knowledge: it is logged, and retried on the next
// change.
func (c *schemaCache) flush() {
	if c == nil || c.path == "" {
		return
	}
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return
	}
	b, err := json.Marshal(schemaDoc{Version: schemaVersion, Entries: c.entries})
	c.dirty = false
	c.mu.Unlock()
	if err == nil {
		err = atomicfile.Write(c.path, b, 0o600)
	}
	if err != nil {
		c.mu.Lock()
		c.dirty = true
		c.mu.Unlock()
		c.log.Warn("could not save the schema cache; listings and eras will be learned again after a restart", "path", c.path, "err", err)
	}
}

// listField returns the entry field a list method fills.
func listField(e *schemaEntry, method string) *json.RawMessage {
	switch method {
	case "tools/list":
		return &e.Tools
	case "prompts/list":
		return &e.Prompts
	case "resources/list":
		return &e.Resources
	case "resources/templates/list":
		return &e.Templates
	}
	return nil
}

// sessionHolder hands a generation's session to callbacks the session
// itself runs (they are made before it exists).
type sessionHolder struct {
	mu   sync.Mutex
	sess *client.Session
}

func (h *sessionHolder) set(s *client.Session) { h.mu.Lock(); h.sess = s; h.mu.Unlock() }
func (h *sessionHolder) get() *client.Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sess
}

// listHooks are the mcpclient callbacks that keep key's entry in step with
// a live child: each fresh listing is stored, and a list_changed drops the
// stale list and lists again (bounded, in the background) so the entry is
// refreshed even if no caller asks.
func (p *Pool) listHooks(key string, h *sessionHolder) (onList func(string, json.RawMessage), onChanged func(string)) {
	onList = func(method string, list json.RawMessage) {
		p.schema.update(key, func(e *schemaEntry) {
			if f := listField(e, method); f != nil {
				*f = list
			}
		})
	}
	onChanged = func(method string) {
		p.schema.update(key, func(e *schemaEntry) {
			if f := listField(e, method); f != nil {
				*f = nil
			}
		})
		s := h.get()
		if s == nil {
			return
		}
		// Under p.mu, as stopAsync: Close, which sets closed under p.mu
		// before it waits, never waits on a WaitGroup still being added to.
		p.mu.Lock()
		defer p.unlock()
		if p.closed {
			return
		}
		p.wg.Go(func() {
			ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
			defer cancel()
			var err error
			switch method {
			case "tools/list":
				_, err = s.Tools(ctx)
			case "prompts/list":
				_, err = s.Prompts(ctx)
			case "resources/list":
				_, err = s.Resources(ctx)
			case "resources/templates/list":
				_, err = s.ResourceTemplates(ctx)
			}
			if err != nil {
				p.log.Debug("refreshing a list after list_changed", "method", method, "err", err)
			}
		})
	}
	return onList, onChanged
}

// Listing is what ToolListing answers from the schema cache.
type Listing struct {
	Tools        json.RawMessage
	Instructions string
	Protocol     string
}

// ToolListing answers t's tools and instructions from the schema cache
// when t has no running or starting instance and its effective definition
// (with the identity of the executable it would run) has an entry with a
// tools list; ok false otherwise, and the caller asks a child. It starts no
// child: the command line is substituted and its executable identified as
// a start would (Options.Resolve included).
func (p *Pool) ToolListing(ctx context.Context, t Target) (Listing, bool) {
	e := p.cachedEntry(ctx, t)
	if e == nil || e.Tools == nil {
		return Listing{}, false
	}
	var init struct {
		Instructions any `json:"instructions"`
	}
	json.Unmarshal(e.Init, &init) //nolint:errcheck // stored from a child's answer; no instructions then
	text, _ := init.Instructions.(string)
	return Listing{Tools: e.Tools, Instructions: text, Protocol: e.Protocol}, true
}

// CachedList is ToolListing for another list of t's — method is
// "prompts/list", "resources/list" or "resources/templates/list" — the
// one its last child of the same effective definition gave, when no
// instance of t runs; ok false otherwise.
func (p *Pool) CachedList(ctx context.Context, t Target, method string) (json.RawMessage, bool) {
	e := p.cachedEntry(ctx, t)
	if e == nil {
		return nil, false
	}
	f := listField(e, method)
	if f == nil || *f == nil {
		return nil, false
	}
	return *f, true
}

// cachedEntry is the schema-cache entry of t's effective definition, if
// t has no starting or ready instance (whose child answers instead) and
// there is one; nil otherwise. It starts no child.
func (p *Pool) cachedEntry(ctx context.Context, t Target) *schemaEntry {
	return p.entryOf(ctx, t, false)
}

// entryOf is cachedEntry; with live, also while an instance of t runs.
func (p *Pool) entryOf(ctx context.Context, t Target, live bool) *schemaEntry {
	p.mu.Lock()
	def := p.servers[t.Server]
	inst := p.instances[t.key()]
	running := inst != nil && (inst.phase == phaseStarting || inst.phase == phaseReady)
	closed := p.closed
	p.unlock()
	if def == nil || (running && !live) || closed || p.schema == nil {
		return nil
	}
	root := t.Root
	if inst != nil {
		root = inst.root // an instance keeps the root it was made with
	}
	sp, err := resolveSpawn(def, vars{root: root, cwd: t.Cwd})
	if err != nil {
		return nil
	}
	exec := ""
	if def.URL == "" && def.Adapter == nil {
		run := sp
		if p.opts.Resolve != nil {
			r, err := p.opts.Resolve(ctx, sp.command, def.Environment, sp.cwd)
			if err != nil {
				return nil
			}
			run.command, run.devEnv, run.isolated = r.Path, r.Env, r.Isolated
		}
		id := execid.Of(run.command, execid.Options{Path: childPath(p.opts.Env, run), Dir: run.cwd, HashMax: p.opts.ExecHashMax, Args: run.args})
		if id.Missing() {
			return nil
		}
		exec = id.Value
	}
	return p.schema.get(schemaKey(def, root, sp, exec))
}

// CachedInit is the initialize result t's last child of the same effective
// definition gave (for a stateless child, the one its server/discover
// stood for), whether or not an instance of t runs; ok false if none is
// known. It starts no child.
func (p *Pool) CachedInit(ctx context.Context, t Target) (json.RawMessage, bool) {
	e := p.entryOf(ctx, t, true)
	if e == nil || e.Init == nil {
		return nil, false
	}
	return e.Init, true
}
