package broker

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/config/chain"
	"mcpx.dev/mcpx/pool"
)

// Project config: the config chain of a caller's cwd (package chain) merged
// into the servers it is served. See docs/project-config.md.
//
// The owner's layers (override paths, the daemon's own config as the user's
// layer, /etc/mcpx, fallback paths) are merged once per load into b.cfg,
// which every caller is served. The project layers, found upward from a
// caller's cwd, are merged over it per call, for the owner and, in its
// roots, a rule of a caller's rights that says projectConfig only.
//
// Caching: a directory's chain is trusted for a second after it was found
// (chain.Cache), like a scope answer; each project config.json on it is
// stat'ed on every use and read again when its size, mtime, inode, mode or
// owner (uid, gid) changed, or whether it is trusted did, and the merge of a cwd is kept while its files are unchanged. A
// reload forgets all of it.

// ChainRevalidate is how long a directory's chain is trusted.
const ChainRevalidate = time.Second

// ServerSource says which file defined a server a caller is served.
type ServerSource struct {
	Name string
	// File is the config file that defines it: "" for the built-in
	// config, or, to a caller other than the owner, the owner's files.
	File string
	Kind chain.Kind // the layer of File
	// Overrides are the farther files whose definition of the name this
	// one replaced, nearest first.
	Overrides []string
	// DisabledBy, if set, is the nearer file whose "disabled": true hides
	// this server: it is not served.
	DisabledBy string
	// Instance is the pool's name for it (status, instances): the name, or
	// for a project definition name@hash.
	Instance string
}

// ChainDir is a directory of the caller's chain, and whether its config
// applies.
type ChainDir struct {
	chain.Dir
	Applied bool   // its config.json is merged
	Skipped string // why its config.json is not
}

// Sources is a caller's config chain and where each of its servers comes
// from (`mcpx config --sources`).
type Sources struct {
	Cwd string
	// ProjectConfig: project files may apply to this caller (in the roots
	// of a rule that says so; each ChainDir says whether its file does).
	ProjectConfig bool
	Chain         []ChainDir
	Servers       []ServerSource
	Warnings      []string
}

// served is a set of servers as one caller is served them.
type served struct {
	servers map[string]*config.Server // by name
	sources map[string]*ServerSource  // by name; disabled ones too
	// pool names the pool definition of each server: its name, or for a
	// project definition name@hash (projectPoolName).
	pool map[string]string
}

func (s *served) poolName(name string) string { return cmp.Or(s.pool[name], name) }

// projects is the broker's project config state. Safe for concurrent use.
type projects struct {
	opts chain.Options // constant: Options.Chain
	log  logger

	mu      sync.Mutex
	chains  *chain.Cache            // guarded by mu; replaced at each load
	base    *served                 // guarded by mu; the owner's layers
	owner   []ChainDir              // guarded by mu; the owner's layers as a chain
	files   map[string]*projectFile // guarded by mu; parsed project files by path
	merged  map[string]*mergedEntry // guarded by mu; by canonical cwd
	defs    map[string]projectDef   // guarded by mu; the pool's project definitions by pool name
	changed []string                // guarded by mu; files read again since their defs were given
}

type logger interface {
	Warn(msg string, args ...any)
	Info(msg string, args ...any)
}

// projectFile is a parsed project config.json.
type projectFile struct {
	stamp   string // size, mtime, inode, mode: read again when it changes
	cfg     *config.Config
	err     error    // the file does not parse (or cannot be read)
	skip    string   // why it is not used though it parses (its owner or mode)
	ignored []string // its non-server sections: only the daemon's config has them
}

type mergedEntry struct {
	key string // the stamps of the files merged
	s   *served
}

type projectDef struct {
	def  pool.Server
	file string
}

func newProjects(opts chain.Options, log logger) *projects {
	return &projects{opts: opts, log: log, files: map[string]*projectFile{}, merged: map[string]*mergedEntry{},
		defs: map[string]projectDef{}}
}

// load merges the owner's layers around cfg, the daemon's own config,
// and returns the config every caller is served; it forgets every cached
// chain and project file. A broken owner file is logged and left out: the
// daemon's own config was checked at load, and the others are the
// owner's to fix.
func (p *projects) load(cfg *config.Config) *config.Config {
	opts := p.opts
	opts.CeilingDirs = append(slices.Clone(opts.CeilingDirs), cfg.CeilingDirs...)
	ch, warns := chain.Find("", opts)
	for _, w := range warns {
		p.log.Warn("config chain: "+w.Msg, "path", w.Path)
	}
	userSeen := false
	var layers []ownerLayer
	var owner []ChainDir
	for _, d := range ch {
		if d.Kind == chain.KindUser {
			// The daemon's own config (--config, default the user's
			// config.json) is the user's layer, whatever the dir holds.
			d.Config = cfg.Source
			userSeen = true
			layers = append(layers, ownerLayer{dir: d, cfg: cfg})
			owner = append(owner, ChainDir{Dir: d, Applied: true})
			continue
		}
		if d.Kind == chain.KindSystem || d.Kind == chain.KindFallback {
			if !userSeen {
				userSeen = true
				layers = append(layers, ownerLayer{dir: chain.Dir{Kind: chain.KindUser, Config: cfg.Source}, cfg: cfg})
				owner = append(owner, ChainDir{Dir: chain.Dir{Kind: chain.KindUser, Config: cfg.Source}, Applied: true})
			}
		}
		cd := ChainDir{Dir: d}
		if d.Config != "" {
			c, err := config.Load(d.Config)
			if err != nil {
				p.log.Warn("config chain: a config file does not load; left out", "file", d.Config, "err", err)
				cd.Skipped = "it does not load: " + err.Error()
			} else {
				cd.Applied = true
				layers = append(layers, ownerLayer{dir: d, cfg: c})
			}
		}
		owner = append(owner, cd)
	}
	if !userSeen {
		d := chain.Dir{Kind: chain.KindUser, Config: cfg.Source}
		layers = append(layers, ownerLayer{dir: d, cfg: cfg})
		owner = append(owner, ChainDir{Dir: d, Applied: true})
	}
	base := &served{servers: map[string]*config.Server{}, sources: map[string]*ServerSource{}, pool: map[string]string{}}
	for i := len(layers) - 1; i >= 0; i-- {
		base.apply(layers[i].dir, layers[i].cfg, false)
	}
	out := *cfg
	out.Servers = base.servers
	p.mu.Lock()
	defer p.mu.Unlock()
	p.chains = chain.NewCache(opts, ChainRevalidate, nil)
	p.base, p.owner = base, owner
	clear(p.files)
	clear(p.merged)
	return &out
}

type ownerLayer struct {
	dir chain.Dir
	cfg *config.Config
}

// apply merges c, the config of d, over s: its servers replace or add,
// its disabled ones hide those inherited. project layers get pool names of
// their own.
func (s *served) apply(d chain.Dir, c *config.Config, project bool) {
	file := d.Config
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		def := c.Servers[name]
		src := &ServerSource{Name: name, File: file, Kind: d.Kind, Instance: name}
		if prev := s.sources[name]; prev != nil && prev.DisabledBy == "" {
			src.Overrides = append([]string{prev.File}, prev.Overrides...)
		}
		if project {
			src.Instance = projectPoolName(name, file, def)
		}
		s.servers[name], s.sources[name], s.pool[name] = def, src, src.Instance
	}
	for _, name := range c.Disabled {
		if prev := s.sources[name]; prev != nil && prev.DisabledBy == "" {
			delete(s.servers, name)
			prev.DisabledBy = file
		}
	}
}

// clone copies s for a merge over it (the definitions are shared: they
// are never modified).
func (s *served) clone() *served {
	out := &served{servers: maps.Clone(s.servers), sources: make(map[string]*ServerSource, len(s.sources)), pool: maps.Clone(s.pool)}
	for k, v := range s.sources {
		c := *v
		out.sources[k] = &c
	}
	return out
}

// projectPoolName is the pool's name for a server a project file defines:
// the name and a hash of the file and the definition, so two repositories
// defining a server differently (or the same way: their files are not the
// same owner's promise) never share a child, and an edited file's children
// are replaced.
func projectPoolName(name, file string, def *config.Server) string {
	b, _ := json.Marshal(def) // a config.Server always marshals
	h := sha256.New()
	h.Write([]byte(file))
	h.Write([]byte{0})
	h.Write(b)
	return name + "@" + hex.EncodeToString(h.Sum(nil))[:12]
}

// trusts reports whether project files may apply to c somewhere (in which
// directories: rights.Rights.ProjectConfig), and if not, why.
func trusts(c Caller) (bool, string) {
	if c.Owner || c.Rights.ProjectConfig("") {
		return true, ""
	}
	return false, "this caller is not the daemon's owner and its grant or token does not say projectConfig: true; it is served the owner's config"
}

// servedTo returns the servers c is served at cwd (as declared), with the
// chain when sources is set. A cwd that is empty, not canonicalisable or
// outside c's roots gets the owner's config: the call's own checks refuse
// such a cwd where it matters.
func (b *Broker) servedTo(c Caller, cwd string) (*served, error) {
	s, _, err := b.serve(c, cwd, false)
	return s, err
}

func (b *Broker) serve(c Caller, cwd string, report bool) (*served, *Sources, error) {
	p := b.projects
	p.mu.Lock()
	base, owner := p.base, p.owner
	p.mu.Unlock()
	ok, why := trusts(c)
	var rep *Sources
	if report {
		rep = &Sources{ProjectConfig: ok}
	}
	if cwd == "" {
		return base, rep, nil
	}
	canon, err := b.scope.CanonicalCwd(cwd)
	if err != nil || !c.Rights.MayUseDir(canon) {
		return base, rep, nil
	}
	if rep != nil {
		rep.Cwd = canon
	}
	p.mu.Lock()
	ch, warns := p.chains.Get(canon)
	p.mu.Unlock()
	var layers []*projectLayer
	for _, d := range ch {
		if d.Kind != chain.KindProject {
			continue
		}
		l := &projectLayer{dir: d}
		switch {
		case d.Config == "":
		case !ok:
			l.skip = why
		case !c.Rights.MayUseDir(d.Canonical):
			l.skip = skipOutsideRoots
		case !c.Owner && !c.Rights.ProjectConfig(d.Canonical):
			l.skip = skipNotTrustedHere
		default:
			l.file = p.file(d.Config)
			l.skip = l.file.skip
		}
		layers = append(layers, l)
	}
	if rep != nil {
		// A caller learns nothing of directories above its roots: they
		// are not applied, and not reported either.
		for _, w := range warns {
			if c.Rights.MayUseDir(w.Path) {
				rep.Warnings = append(rep.Warnings, w.String())
			}
		}
		for _, l := range layers {
			if l.skip == skipOutsideRoots {
				continue
			}
			cd := ChainDir{Dir: l.dir, Skipped: l.skip}
			if l.file != nil && l.file.err != nil {
				cd.Skipped = "it does not load: " + l.file.err.Error()
			}
			cd.Applied = l.used()
			if cd.Applied {
				for _, f := range l.file.ignored {
					rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %q ignored: only the daemon's own config sets it", l.dir.Config, f))
				}
			}
			rep.Chain = append(rep.Chain, cd)
		}
		rep.Chain = append(rep.Chain, owner...)
	}
	s, err := b.merge(canon, base, layers)
	b.dropChanged()
	return s, rep, err
}

// skippedProjectFiles names, for the owner, the project files on cwd's
// chain that are skipped and why ("" if none, or c is not the owner: the
// reasons name paths).
func (b *Broker) skippedProjectFiles(c Caller, cwd string) string {
	if !c.Owner || cwd == "" {
		return ""
	}
	_, rep, err := b.serve(c, cwd, true)
	if err != nil || rep == nil {
		return ""
	}
	var notes []string
	for _, d := range rep.Chain {
		if d.Kind == chain.KindProject && d.Config != "" && d.Skipped != "" {
			notes = append(notes, fmt.Sprintf("the project config %s is skipped: %s", d.Config, d.Skipped))
		}
	}
	return strings.Join(notes, "; ")
}

// skipOutsideRoots is why a project directory above the caller's roots is
// not applied: whoever may write there is not vouched for by its rights.
const skipOutsideRoots = "it lies outside the roots this caller may use"

// skipNotTrustedHere is why a project directory in the caller's roots is
// not applied when the rules that say projectConfig do not reach it: a
// rule's projectConfig trusts the project files in that rule's roots only
// (package rights, "Admin, metrics and project config").
const skipNotTrustedHere = "no rule of this caller's grant or token that says projectConfig: true reaches it; it is served the owner's config here"

// projectLayer is a project directory of a caller's chain.
type projectLayer struct {
	dir  chain.Dir
	file *projectFile // nil: no config.json, or not read (skip says why)
	skip string
}

func (l *projectLayer) used() bool { return l.file != nil && l.skip == "" && l.file.err == nil }

// merge returns base with the usable layers (nearest first) merged over it,
// cached per cwd while the files are unchanged. A layer whose file does not
// load fails the caller's chain with a 400 naming the file.
func (b *Broker) merge(cwd string, base *served, layers []*projectLayer) (*served, error) {
	var key strings.Builder
	var use []*projectLayer
	for _, l := range layers {
		if l.file != nil && l.skip == "" && l.file.err != nil {
			return nil, &Error{Kind: KindBadRequest, Op: "read project config", Field: l.dir.Config,
				Msg:  fmt.Sprintf("the project config %s on this cwd's config chain does not load: %v", l.dir.Config, l.file.err),
				Hint: "fix the file (`mcpx config check --config " + l.dir.Config + "` lists every problem); `mcpx config --sources` shows the chain"}
		}
		if l.used() {
			use = append(use, l)
			key.WriteString(l.dir.Config + "\x00" + l.file.stamp + "\x00")
		}
	}
	if len(use) == 0 {
		return base, nil
	}
	p := b.projects
	p.mu.Lock()
	if e := p.merged[cwd]; e != nil && e.key == key.String() {
		p.mu.Unlock()
		return e.s, nil
	}
	p.mu.Unlock()
	s := base.clone()
	for i := len(use) - 1; i >= 0; i-- {
		s.apply(use[i].dir, use[i].file.cfg, true)
	}
	p.mu.Lock()
	if len(p.merged) >= chain.MaxCached {
		clear(p.merged)
	}
	p.merged[cwd] = &mergedEntry{key: key.String(), s: s}
	p.mu.Unlock()
	return s, nil
}

// file returns the parsed project file at path, read again if its stat
// changed. A changed file's pool definitions are dropped (forget), so its
// children drain as for a changed config.
func (p *projects) file(path string) *projectFile {
	stamp, skip, err := fileStamp(path)
	if afterStamp != nil {
		afterStamp(path)
	}
	p.mu.Lock()
	f := p.files[path]
	p.mu.Unlock()
	if f != nil && f.stamp == stamp && f.skip == skip && err == nil {
		return f
	}
	if f != nil {
		p.changed = append(p.changed, path) // its children drain (Broker.dropChanged)
	}
	f = &projectFile{stamp: stamp, skip: skip, err: err}
	if err == nil && skip == "" {
		// Checked again and read as one open file: a file swapped in
		// since the stat is judged on its own owner and mode, and its
		// stamp is what the cache keeps.
		data, fi, rerr := config.ReadTrusted(path, daemonUID())
		if fi != nil {
			f.stamp, f.skip = stampOf(fi), ""
		}
		var untrusted *config.UntrustedError
		switch {
		case errors.As(rerr, &untrusted):
			f.skip = rerr.Error()
		case rerr != nil:
			f.err = rerr
		default:
			f.cfg, f.err = config.Parse(data, path)
			f.ignored = ownerSections(data)
		}
	}
	p.mu.Lock()
	if len(p.files) >= chain.MaxCached {
		clear(p.files)
	}
	p.files[path] = f
	p.mu.Unlock()
	return f
}

// dropChanged forgets the pool definitions from project files that changed
// since they were read, so their children drain and are replaced as for a
// changed config; the merge already names the new definitions.
func (b *Broker) dropChanged() {
	p := b.projects
	p.mu.Lock()
	changed := p.changed
	p.changed = nil
	p.mu.Unlock()
	if len(changed) == 0 {
		return
	}
	b.setMu.Lock()
	defer b.setMu.Unlock()
	p.mu.Lock()
	for name, d := range p.defs {
		if slices.Contains(changed, d.file) {
			delete(p.defs, name)
		}
	}
	p.mu.Unlock()
	b.applyServers()
}

// afterStamp, if set (tests only), runs between a project file's stat and
// its read: where a file swapped in would be read on its predecessor's
// trust, had the read not checked again.
var afterStamp func(path string)

// daemonUID is the uid whose project files are trusted: the daemon's (a
// variable for tests, which cannot chown a file to another user unless
// root).
var daemonUID = os.Getuid

// fileStamp is what identifies a version of a file for the cache, and why
// a file is not to be trusted though it reads: project files name commands
// the daemon runs as its own user, so one config.TrustedInfo refuses
// (another user owns it, or others may write it) is skipped.
func fileStamp(path string) (stamp, skip string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", "", err
	}
	if err := config.TrustedInfo(fi, daemonUID()); err != nil {
		skip = err.Error()
	}
	return stampOf(fi), skip, nil
}

// stampOf is the cache's stamp of a file stat'ed as fi.
func stampOf(fi fs.FileInfo) string {
	st, _ := fi.Sys().(*syscall.Stat_t)
	var ino, uid, gid uint64
	if st != nil {
		ino, uid, gid = st.Ino, uint64(st.Uid), uint64(st.Gid)
	}
	// The owner is part of the stamp: a chown changes neither size, mtime,
	// inode nor mode, and decides whether the file is trusted.
	return fmt.Sprintf("%d/%d/%d/%o/%d/%d", fi.Size(), fi.ModTime().UnixNano(), ino, fi.Mode(), uid, gid)
}

// ownerSections lists the top-level fields of a project file's content
// (data) other than its servers: the pool, limits, nix, records and
// ceilingDirs are the daemon's, set in its own config only.
func ownerSections(data []byte) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(top)) {
		switch k {
		case "pool", "limits", "nix", "records", "ceilingDirs":
			out = append(out, k)
		}
	}
	return out
}

// ensureDef gives the pool the definition of a project server before its
// first call. Those the pool knows already cost one map lookup.
func (b *Broker) ensureDef(poolName, file string, def *config.Server) {
	p := b.projects
	p.mu.Lock()
	_, ok := p.defs[poolName]
	p.mu.Unlock()
	if ok {
		return
	}
	defaults := b.currentConfig().Defaults
	b.setMu.Lock()
	defer b.setMu.Unlock()
	p.mu.Lock()
	d := b.poolServer(poolName, def, file, defaults)
	p.defs[poolName] = projectDef{def: d, file: file}
	p.mu.Unlock()
	b.applyServers()
}

// projectDefs returns the pool definitions of project servers, sorted by
// name.
func (p *projects) projectDefs() []pool.Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]pool.Server, 0, len(p.defs))
	for _, name := range slices.Sorted(maps.Keys(p.defs)) {
		out = append(out, p.defs[name].def)
	}
	return out
}

// pruneDefs forgets the project definitions no instance uses (at a load):
// the next call that needs one gives it again.
func (p *projects) pruneDefs(running map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name := range p.defs {
		if !running[name] {
			delete(p.defs, name)
		}
	}
}

// ConfigSources reports the config chain of r's cwd as r.Caller is served
// it: each directory, whether its config applies (and why not), and per
// server the file that defines it. To a caller other than the owner, the
// owner's files are named by their kind only.
func (b *Broker) ConfigSources(r Request) (Sources, error) {
	s, rep, err := b.serve(r.Caller, r.Context.Cwd, true)
	if err != nil {
		return Sources{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(s.sources)) {
		if !r.Caller.Rights.MayUse(name) {
			continue
		}
		rep.Servers = append(rep.Servers, *s.sources[name])
	}
	if !r.Caller.Owner {
		redactOwner(rep)
	}
	if rep.Chain == nil {
		rep.Chain = []ChainDir{}
	}
	if rep.Servers == nil {
		rep.Servers = []ServerSource{}
	}
	return *rep, nil
}

// redactOwner hides the paths of the owner's layers from another caller:
// their directories and files are named by kind only, the servers they
// disable are left out, and their files are left out of Overrides.
func redactOwner(rep *Sources) {
	owned := map[string]bool{}
	for i := range rep.Chain {
		d := &rep.Chain[i]
		if d.Kind != chain.KindProject {
			owned[d.Config] = true
			d.Path, d.Config, d.Scripts, d.Lib, d.Skipped = "", "", "", "", ""
		}
	}
	servers := rep.Servers[:0]
	for _, s := range rep.Servers {
		if s.DisabledBy != "" && owned[s.DisabledBy] {
			continue
		}
		if s.Kind != chain.KindProject {
			s.File = ""
		}
		s.Overrides = slices.DeleteFunc(slices.Clone(s.Overrides), func(f string) bool { return owned[f] })
		if len(s.Overrides) == 0 {
			s.Overrides = nil
		}
		servers = append(servers, s)
	}
	rep.Servers = servers
}
