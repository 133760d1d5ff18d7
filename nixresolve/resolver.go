package nixresolve

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/internal/defaults"
	"mcpx.dev/mcpx/nixresolve/nixspec"
)

// DefaultTimeout bounds one resolution (lock, evaluate, build) when
// Options.Timeout is zero (2m; the config's nix.timeout, stated in package
// internal/defaults). A cold build of a real tool can take minutes.
const DefaultTimeout = defaults.NixTimeout

// Options configure a Resolver.
type Options struct {
	// CacheDir holds the cache file and the GC roots (roots/). Required;
	// created if missing. The daemon uses <state dir>/nix.
	CacheDir string
	// Binary is the nix executable, a name looked up on PATH or a path;
	// "" = "nix".
	Binary string
	// Offline passes --offline to every nix command: nothing is fetched,
	// so a ref that is not already in the store fails (fast).
	Offline bool
	// Timeout bounds one resolution; on expiry the running nix process
	// group is killed. 0 = DefaultTimeout.
	Timeout time.Duration
	// Config lines are appended to NIX_CONFIG for every nix process
	// ("substituters = ...", "experimental-features = nix-command flakes").
	Config []string
	// Env is the environment of nix processes; nil = os.Environ().
	Env []string
	// Dir is what relative path refs (nix:.#tool, nix:./tools#x) are
	// relative to; "" = the process's working directory at New.
	Dir string
	// Run starts a nix process and waits for it, as (*exec.Cmd).Run, which
	// it is when nil. The daemon passes proc.RunTracked, so that its orphan
	// reaper leaves nix's exit status to the resolver.
	Run    func(*exec.Cmd) error
	Logger *slog.Logger // nil = discard
}

// Locked is the locked flake reference a program was built from, as
// `nix flake metadata --json` reports it.
type Locked struct {
	URL          string `json:"url"`           // the locked URL nix built from
	Rev          string `json:"rev,omitempty"` // git refs; "" for path: refs and dirty trees
	NarHash      string `json:"narHash,omitempty"`
	LastModified int64  `json:"lastModified,omitempty"`
}

// Program is a resolved spec: what to exec, and where it came from.
type Program struct {
	Spec       string    `json:"spec"`      // as written, with relative paths made absolute
	Path       string    `json:"path"`      // <StorePath>/bin/<name>: what to exec
	StorePath  string    `json:"storePath"` // the package's output
	Locked     Locked    `json:"locked"`
	Root       string    `json:"root"` // the GC root (an out-link in CacheDir/roots)
	ResolvedAt time.Time `json:"resolvedAt"`
}

// Resolver turns program specs into store paths. It is safe for concurrent
// use; concurrent resolutions of one spec share one run of nix.
type Resolver struct {
	opts Options
	log  *slog.Logger
	env  []string
	file string // the cache file

	ctx    context.Context // resolutions' lifetime; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // running resolutions

	mu         sync.Mutex
	entries    map[string]Program    // guarded by mu; by Program.Spec
	flights    map[string]*flight    // guarded by mu; resolutions running now
	envs       map[string]DevEnv     // guarded by mu; captured environments, by DevEnv.Environment
	envFlights map[string]*envFlight // guarded by mu; captures running now
	closed     bool                  // guarded by mu
	stats      Stats                 // guarded by mu
}

// Stats count what a Resolver did since it was made: nix runs, not cache
// hits (the hot path runs no nix and counts nothing).
type Stats struct {
	Resolved      int64 // program specs locked, evaluated and built
	ResolveFailed int64 // resolutions that failed (nix's error, a timeout, no nix)
	Captured      int64 // execution environments captured (nix print-dev-env)
	CaptureFailed int64 // captures that failed
}

// Stats returns what the resolver did since it was made.
func (r *Resolver) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// flight is one resolution in progress; done is closed after prog and err
// are set.
type flight struct {
	done chan struct{}
	prev Program // the cache entry it replaced, if any
	prog Program
	err  error
}

// cacheFile is the cache's on-disk form.
type cacheFile struct {
	Version int                `json:"version"`
	Entries map[string]Program `json:"entries"`
	Envs    map[string]DevEnv  `json:"environments,omitempty"`
}

const cacheVersion = 1

// New returns a resolver over opts.CacheDir, loading what earlier runs
// resolved. A cache file that cannot be read is logged and started afresh:
// the cost is one resolution per spec.
func New(opts Options) (*Resolver, error) {
	if opts.CacheDir == "" {
		return nil, errors.New("nixresolve: no cache directory")
	}
	opts.Binary = cmp.Or(opts.Binary, "nix")
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	if opts.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("nixresolve: %w", err)
		}
		opts.Dir = wd
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	if err := os.MkdirAll(filepath.Join(opts.CacheDir, "roots"), 0o700); err != nil {
		return nil, fmt.Errorf("nixresolve: creating the cache directory: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Resolver{
		opts: opts, log: log, env: nixEnv(env, opts.Config),
		file:       filepath.Join(opts.CacheDir, "cache.json"),
		ctx:        ctx,
		cancel:     cancel,
		entries:    map[string]Program{},
		flights:    map[string]*flight{},
		envs:       map[string]DevEnv{},
		envFlights: map[string]*envFlight{},
	}
	r.load()
	return r, nil
}

func (r *Resolver) load() {
	data, err := os.ReadFile(r.file)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var cf cacheFile
	if err == nil {
		err = json.Unmarshal(data, &cf)
	}
	if err == nil && cf.Version != cacheVersion {
		err = fmt.Errorf("version %d, want %d", cf.Version, cacheVersion)
	}
	if err != nil {
		r.log.Warn("nix cache unreadable; specs will be resolved again", "file", r.file, "err", err)
		return
	}
	for k, p := range cf.Entries {
		r.entries[k] = p
	}
	for k, d := range cf.Envs {
		r.envs[k] = d
	}
}

// saveLocked writes the cache file atomically.
func (r *Resolver) saveLocked() error {
	data, err := json.MarshalIndent(cacheFile{Version: cacheVersion, Entries: r.entries, Envs: r.envs}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(r.file, data, 0o600)
}

// Close cancels running resolutions (their nix processes are killed) and
// waits for them. Resolve fails with ErrClosed afterwards.
func (r *Resolver) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	return nil
}

// Resolve returns the program spec names. A spec resolved before whose
// program is still in the store is answered from the cache with no nix
// process; otherwise nix locks, evaluates and builds it, bounded by
// Options.Timeout, and concurrent callers for one spec share that work.
// ctx bounds only this caller's wait: a resolution it started goes on for
// the others and for the cache.
func (r *Resolver) Resolve(ctx context.Context, spec string) (Program, error) {
	s, err := nixspec.Parse(spec)
	if err != nil {
		return Program{}, &Error{Spec: spec, Err: ErrSpec, Msg: err.Error()}
	}
	key := absolute(s, r.opts.Dir).String()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Program{}, &Error{Spec: spec, Err: ErrClosed, Msg: "the daemon is shutting down"}
	}
	p, cached := r.entries[key]
	f := r.flights[key]
	r.mu.Unlock()
	if cached && f == nil {
		if isExecutable(p.Path) {
			return p, nil
		}
		r.log.Warn("nix program vanished from the store; resolving again", "spec", key, "path", p.Path)
	}
	f = r.join(key, spec)
	if f == nil {
		return Program{}, &Error{Spec: spec, Err: ErrClosed, Msg: "the daemon is shutting down"}
	}
	return f.wait(ctx, spec)
}

// join returns the resolution of key running now, or starts one; nil once
// the resolver is closed.
func (r *Resolver) join(key, written string) *flight {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	f := r.flights[key]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		r.flights[key] = f
		r.wg.Go(func() { r.fly(key, written, f) })
	}
	return f
}

// wait waits for f's outcome; ctx bounds only this caller's wait.
func (f *flight) wait(ctx context.Context, spec string) (Program, error) {
	select {
	case <-f.done:
		return f.prog, f.err
	case <-ctx.Done():
		return Program{}, fmt.Errorf("resolving %s: %w", spec, context.Cause(ctx))
	}
}

// Cached returns the cache entry of spec, if any, without running nix or
// checking the store.
func (r *Resolver) Cached(spec string) (Program, bool) {
	s, err := nixspec.Parse(spec)
	if err != nil {
		return Program{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.entries[absolute(s, r.opts.Dir).String()]
	return p, ok
}

// fly runs one resolution of key for everyone waiting on f, and records it.
func (r *Resolver) fly(key, written string, f *flight) {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	defer cancel()
	start := time.Now()
	p, err := r.resolve(ctx, key, written)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.flights, key)
	old := r.entries[key]
	f.prev, f.prog, f.err = old, p, err
	// Waiters wake once the cache, its file and the roots agree with
	// what they are told (a new Resolver on the directory reads them).
	defer close(f.done)
	if err != nil {
		r.stats.ResolveFailed++
		return
	}
	r.stats.Resolved++
	r.entries[key] = p
	if serr := r.saveLocked(); serr != nil {
		r.log.Warn("nix cache not saved; the next start resolves again", "file", r.file, "err", serr)
	}
	if old.Root != "" && old.Root != p.Root {
		os.Remove(old.Root) // the old store path may now be collected
	}
	r.log.Info("nix program resolved", "spec", key, "path", p.Path, "rev", p.Locked.Rev,
		"narHash", p.Locked.NarHash, "took", time.Since(start).Round(time.Millisecond))
}

// metadata is what `nix flake metadata --json` says that we use.
type metadata struct {
	URL    string `json:"url"`
	Locked struct {
		Rev          string `json:"rev"`
		NarHash      string `json:"narHash"`
		LastModified int64  `json:"lastModified"`
	} `json:"locked"`
}

// evalApply asks for the program name's sources in one evaluation. (A key
// named outPath would collapse the result to that string.)
const evalApply = `p: { out = p.outPath; main = p.meta.mainProgram or null; pname = p.pname or null; name = p.name or null; }`

type evalResult struct {
	Out   string  `json:"out"`
	Main  *string `json:"main"`
	Pname *string `json:"pname"`
	Name  *string `json:"name"`
}

// resolve locks, evaluates and builds spec key. written is the spec as the
// caller wrote it, for errors.
func (r *Resolver) resolve(ctx context.Context, key, written string) (Program, error) {
	s, _ := nixspec.Parse(key)
	fail := func(kind error, msg, stderr string, err error) (Program, error) {
		e := &Error{Spec: written, Err: kind, Msg: msg, Output: nixMessage(stderr), Cause: err}
		switch {
		case notFound(err):
			e.Err, e.Output = ErrNoNix, ""
			e.Msg = "needs Nix on the broker machine; install Nix or use a plain command"
			if r.opts.Binary != "nix" {
				e.Msg = fmt.Sprintf("needs Nix on the broker machine (nix.binary %q not found); install Nix, fix nix.binary, or use a plain command", r.opts.Binary)
			}
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			e.Err = ErrTimeout
			e.Msg = fmt.Sprintf("%s: nix did not finish within %s (nix.timeout); it was killed", msg, r.opts.Timeout)
		case r.ctx.Err() != nil:
			e.Err, e.Msg = ErrClosed, "the daemon is shutting down"
		}
		return Program{}, e
	}

	out, stderr, err := r.run(ctx, "flake", "metadata", "--json", s.Ref)
	if err != nil {
		msg := "cannot lock flake reference " + s.Ref
		if r.opts.Offline && offlineMayCause(s.Ref, stderr) {
			msg = "nix.offline is set and nothing is cached for this spec; " + msg
		}
		return fail(ErrLock, msg, stderr, err)
	}
	var md metadata
	if err := json.Unmarshal(out, &md); err != nil {
		return fail(ErrLock, "cannot read nix flake metadata's answer", "", err)
	}
	locked := Locked{URL: cmp.Or(md.URL, s.Ref), Rev: md.Locked.Rev, NarHash: md.Locked.NarHash, LastModified: md.Locked.LastModified}
	// Evaluate and build the locked ref, so that what runs is what the
	// lock says even if the flake moves meanwhile.
	inst := nixspec.Installable(locked.URL, s.Attr)

	out, stderr, err = r.run(ctx, "eval", "--json", inst, "--apply", evalApply)
	if err != nil {
		return fail(ErrEval, "cannot evaluate "+describeAttr(s), stderr, err)
	}
	var ev evalResult
	if err := json.Unmarshal(out, &ev); err != nil || ev.Out == "" {
		return fail(ErrEval, describeAttr(s)+" is not a package (no outPath)", "", err)
	}
	name := programName(ev)
	if name == "" {
		return fail(ErrProgram, describeAttr(s)+" names no program: set meta.mainProgram or pname", "", nil)
	}

	root := filepath.Join(r.opts.CacheDir, "roots", rootName(key, locked))
	out, stderr, err = r.run(ctx, "build", "--json", "--out-link", root, inst)
	if err != nil {
		return fail(ErrBuild, "cannot build "+describeAttr(s), stderr, err)
	}
	var built []struct {
		Outputs map[string]string `json:"outputs"`
	}
	if err := json.Unmarshal(out, &built); err != nil || len(built) == 0 || built[0].Outputs["out"] == "" {
		return fail(ErrBuild, "cannot read nix build's answer", "", err)
	}
	store := built[0].Outputs["out"]
	p := Program{Spec: key, Path: filepath.Join(store, "bin", name), StorePath: store, Locked: locked, Root: root, ResolvedAt: time.Now()}
	if !isExecutable(p.Path) {
		return fail(ErrProgram, fmt.Sprintf("%s built to %s, which has no executable bin/%s; set meta.mainProgram to the program under bin/", describeAttr(s), store, name), "", nil)
	}
	return p, nil
}

func describeAttr(s nixspec.Spec) string {
	if s.Attr == "" {
		return "the default package of " + s.Ref
	}
	return fmt.Sprintf("attribute %q of %s", s.Attr, s.Ref)
}

// programName is what `nix run` would run: meta.mainProgram, else pname,
// else the name without its version.
func programName(ev evalResult) string {
	switch {
	case ev.Main != nil && *ev.Main != "":
		return *ev.Main
	case ev.Pname != nil && *ev.Pname != "":
		return *ev.Pname
	case ev.Name != nil:
		return drvName(*ev.Name)
	}
	return ""
}

// versionStart finds where a derivation name's version begins: the first
// '-' followed by something other than a letter (as nix's DrvName does).
var versionStart = regexp.MustCompile(`-[^a-zA-Z]`)

// drvName is name without its version: "hello-2.12" -> "hello".
func drvName(name string) string {
	if loc := versionStart.FindStringIndex(name); loc != nil {
		return name[:loc[0]]
	}
	return name
}

// rootName names the GC root of one resolution: the spec and its lock, so a
// new lock gets a new root and the old one is dropped once replaced.
func rootName(key string, l Locked) string {
	h := sha256.Sum256([]byte(key + "\x00" + l.URL + "\x00" + l.NarHash))
	return hex.EncodeToString(h[:10])
}
