package pool

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/internal/placeholder"
	"mcpx.dev/mcpx/pool/portalloc"
	"mcpx.dev/mcpx/pool/proc"
)

// Alloc is one of a server's per-instance allocations: a TCP port from
// Range, which ${mcpx.alloc.NAME} stands for. Every instance holds its own
// from its first start until it stops (package portalloc); ranges shared
// between servers are fine, as one allocator serves the whole pool.
type Alloc struct {
	Range [2]int // the lowest and highest port, inclusive
}

// resources are what an instance was given at its first start for
// ${mcpx.tmpdir} and ${mcpx.alloc.*}, or took back from its predecessor
// when adopted (reclaim); released once it has stopped and its child is
// gone.
type resources struct {
	tmpdir string                     // "" = none made
	ports  map[string]*portalloc.Hold // by allocation name
}

// values are the placeholder values resources stand for.
func (r *resources) values() (tmpdir string, alloc map[string]string) {
	alloc = make(map[string]string, len(r.ports))
	for name, h := range r.ports {
		alloc[name] = strconv.Itoa(h.Port())
	}
	return r.tmpdir, alloc
}

// unbind lets the child bind the ports: the pool calls it just before exec.
func (r *resources) unbind() {
	for _, h := range r.ports {
		h.Unbind()
	}
}

// release gives the ports back and removes the private directory. Call it
// only once the instance's child has exited.
func (r *resources) release() error {
	for _, h := range r.ports {
		h.Release()
	}
	if r.tmpdir != "" {
		return os.RemoveAll(r.tmpdir)
	}
	return nil
}

// perInstance reports whether def holds ${mcpx.tmpdir} or an allocation:
// then its spawn spec is made at the instance's first start, when they are.
func perInstance(def *Server) bool {
	if len(def.Allocate) > 0 {
		return true
	}
	found := false
	eachField(def, func(s string) {
		found = found || placeholder.PerInstance(s)
	})
	return found
}

// usesTmpDir reports whether any field of def holds ${mcpx.tmpdir}.
func usesTmpDir(def *Server) bool {
	found := false
	eachField(def, func(s string) {
		found = found || strings.Contains(s, placeholder.TmpDir)
	})
	return found
}

func eachField(def *Server, f func(string)) {
	f(def.Command)
	for _, a := range def.Args {
		f(a)
	}
	for _, v := range def.Env {
		f(v)
	}
	f(def.Cwd)
	f(def.URL)
	for _, v := range def.Headers {
		f(v)
	}
}

// SafeKey is a scope key as ${mcpx.key} gives it: safe in a file name and
// in a URL, and distinct for distinct keys. Runs of characters other than
// ASCII letters, digits, '.', '_' and '-' become one '-', the result is cut
// to 48 bytes and never starts with '.', and the first 12 hex digits of
// the key's sha256 follow: "worktree:/src/app" becomes
// "worktree-src-app-" + 12 hex digits.
func SafeKey(key string) string {
	var b strings.Builder
	dash := false
	for _, c := range []byte(key) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		switch {
		case ok:
			b.WriteByte(c)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	slug := strings.TrimLeft(b.String(), ".-")
	if len(slug) > 48 {
		slug = slug[:48]
	}
	slug = strings.TrimRight(slug, "-")
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:6])
	if slug == "" {
		return h
	}
	return slug + "-" + h
}

// acquireResources gives inst what its definition asks for: its ports,
// bound, and its private directory. On an error nothing is kept.
func (p *Pool) acquireResources(inst *instance) (*resources, error) {
	def := inst.def
	r := &resources{ports: map[string]*portalloc.Hold{}}
	for _, name := range slices.Sorted(maps.Keys(def.Allocate)) {
		rg := def.Allocate[name].Range
		h, err := p.ports.Take(inst.id, rg[0], rg[1])
		if err != nil {
			r.release()
			hint := "widen the range, lower the server's max, or stop instances that hold ports"
			if !errors.Is(err, portalloc.ErrExhausted) {
				hint = "fix the range"
			}
			return nil, fmt.Errorf("server %q: allocate.%s.range: %v; %s", def.Name, name, err, hint)
		}
		r.ports[name] = h
	}
	if usesTmpDir(def) || inst.sandbox != nil {
		base, err := p.tmpBase()
		if err == nil {
			r.tmpdir, err = os.MkdirTemp(base, inst.id+"-")
		}
		if err != nil {
			r.release()
			return nil, fmt.Errorf("server %q: cannot make the instance's ${mcpx.tmpdir}: %v; check that the daemon's state directory is writable", def.Name, err)
		}
	}
	return r, nil
}

// tmpBase is this pool's directory for instances' ${mcpx.tmpdir}, made on
// first use, 0700, canonical: Options.TmpDir/run-<pid>-<random>, or
// mcpx-instances-<random> under os.TempDir() when TmpDir is "". Close
// removes it. Runs of daemons that died without removing theirs are
// removed here, when their pid is gone, but for those holding an adopted
// instance's directory (sparedRunsLocked).
func (p *Pool) tmpBase() (string, error) {
	p.tmpMu.Lock()
	defer p.tmpMu.Unlock()
	if p.tmpRun != "" {
		return p.tmpRun, nil
	}
	parent, prefix := p.opts.TmpDir, fmt.Sprintf("run-%d-", os.Getpid())
	if parent == "" {
		parent, prefix = os.TempDir(), "mcpx-instances-"
	} else {
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return "", err
		}
		if real, err := canonical(parent); err == nil {
			sweepRuns(real, p.sparedRunsLocked())
		}
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", err
	}
	if dir, err = canonical(dir); err != nil {
		return "", err
	}
	p.tmpRun = dir
	return dir, nil
}

// canonical is dir absolute, its links resolved.
func canonical(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	return filepath.Abs(real)
}

// sweepRuns removes the run-<pid>-* directories under parent whose pid no
// longer exists (a daemon that died before its Close), but those in spare.
func sweepRuns(parent string, spare map[string]bool) {
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "run-")
		pidText, _, ok2 := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		dir := filepath.Join(parent, e.Name())
		if !ok || !ok2 || err != nil || !e.IsDir() || pid <= 0 || pid == os.Getpid() || spare[dir] {
			continue
		}
		if proc.Gone(pid) {
			os.RemoveAll(dir)
		}
	}
}

// sparedRunsLocked are the run directories a sweep must leave though
// their daemon is gone: those holding adopted instances' directories, and
// those of the children a killed daemon kept, which AdoptSurvivors may yet
// adopt (a warm start may sweep before it runs). Called with tmpMu held.
func (p *Pool) sparedRunsLocked() map[string]bool {
	spare := map[string]bool{}
	for dir := range p.tmpKept {
		spare[dir] = true
	}
	if p.opts.Survive && p.opts.SurviveFile != "" {
		var f surviveFile
		if _, err := atomicfile.ReadJSON(p.opts.SurviveFile, &f); err == nil {
			for _, r := range f.Children {
				if r.Tmpdir != "" {
					spare[filepath.Dir(r.Tmpdir)] = true
				}
			}
		}
	}
	return spare
}

// isRunDir reports whether dir is a run directory this pool's options
// make (tmpBase), its own or a predecessor's: run-* in Options.TmpDir, or
// mcpx-instances-* in os.TempDir() when TmpDir is "".
func (p *Pool) isRunDir(dir string) bool {
	parent, prefix := p.opts.TmpDir, "run-"
	if parent == "" {
		parent, prefix = os.TempDir(), "mcpx-instances-"
	}
	parent, err := canonical(parent)
	if err != nil || filepath.Dir(dir) != parent || !strings.HasPrefix(filepath.Base(dir), prefix) {
		return false
	}
	fi, err := os.Lstat(dir)
	return err == nil && fi.IsDir()
}

// keepRuns makes dirs, a predecessor's run directories, this pool's to
// remove: once empty, or at Close. The sweep leaves them meanwhile.
func (p *Pool) keepRuns(dirs ...string) {
	p.tmpMu.Lock()
	defer p.tmpMu.Unlock()
	for _, dir := range dirs {
		if dir == p.tmpRun {
			continue
		}
		if p.tmpKept == nil {
			p.tmpKept = map[string]bool{}
		}
		p.tmpKept[dir] = true
	}
}

// runDirs are this pool's run directories, for a successor to remove.
func (p *Pool) runDirs() []string {
	p.tmpMu.Lock()
	defer p.tmpMu.Unlock()
	dirs := slices.Sorted(maps.Keys(p.tmpKept))
	if p.tmpRun != "" {
		dirs = append(dirs, p.tmpRun)
	}
	return dirs
}

// dropRunIfEmpty removes dir, a predecessor's run directory, once the last
// private directory in it is gone.
func (p *Pool) dropRunIfEmpty(dir string) {
	p.tmpMu.Lock()
	defer p.tmpMu.Unlock()
	if p.tmpKept[dir] && os.Remove(dir) == nil {
		delete(p.tmpKept, dir)
	}
}

// removeTmpBase removes this pool's run directories, once every instance
// has stopped (Close).
func (p *Pool) removeTmpBase() {
	p.tmpMu.Lock()
	defer p.tmpMu.Unlock()
	for _, dir := range append(slices.Sorted(maps.Keys(p.tmpKept)), p.tmpRun) {
		if dir == "" {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			p.log.Warn("cannot remove the instances' private directories", "dir", dir, "err", err)
		}
	}
	p.tmpRun, p.tmpKept = "", nil
}

// lowestIndexLocked is the lowest index no live instance of server holds.
func (p *Pool) lowestIndexLocked(server string) int {
	used := p.indexes[server]
	for i := 0; ; i++ {
		if _, ok := used[i]; !ok {
			return i
		}
	}
}

// prepare returns the spawn spec for inst's next start. A per-instance
// definition gets its resources at the first start (a failure is a start
// failure, backed off like one) and its spec with them; later starts bind
// its ports again. Only inst's start goroutine calls it.
func (p *Pool) prepare(inst *instance) (spawnSpec, error) {
	p.mu.Lock()
	res, ready := inst.res, inst.specReady
	p.unlock()
	if ready {
		if res != nil {
			for name, h := range res.ports {
				if err := h.Rebind(); err != nil {
					return spawnSpec{}, fmt.Errorf("server %q: allocate.%s: %v; stop the instance (mcpx stop %s) to get another port", inst.def.Name, name, err, inst.id)
				}
			}
		}
		return inst.spec, nil
	}
	res, err := p.acquireResources(inst)
	if err != nil {
		return spawnSpec{}, err
	}
	v := inst.vars()
	v.tmpdir, v.alloc = res.values()
	sp, err := resolveSpawn(inst.def, v)
	if err != nil {
		res.release()
		return spawnSpec{}, err
	}
	p.mu.Lock()
	removed := inst.phase.removed()
	if !removed {
		inst.res, inst.spec, inst.specReady = res, sp, true
	}
	p.unlock()
	if removed {
		// Stopped while we allocated; its stopper may already have
		// released what it had. Its directory goes outside p.mu.
		res.release()
		return spawnSpec{}, fmt.Errorf("server %q: the instance was stopped while it started", inst.def.Name)
	}
	return sp, nil
}

// releaseLocked frees inst's index and hands back its resources, once its
// stopper is done and no start or child of it remains; the caller releases
// them after unlocking p.mu (removing a directory may take a while).
func (p *Pool) releaseLocked(inst *instance) *resources {
	if inst.phase != phaseStopped || inst.starting != nil || inst.gen != nil || inst.freed {
		return nil
	}
	inst.freed = true
	if used := p.indexes[inst.def.Name]; used[inst.index] == inst {
		delete(used, inst.index)
		if len(used) == 0 {
			delete(p.indexes, inst.def.Name)
		}
	}
	res := inst.res
	inst.res = nil
	return res
}

// releaseResources releases res (nil = nothing) outside p.mu.
func (p *Pool) releaseResources(inst *instance, res *resources) {
	p.freeResources(inst.def.Name, inst.id, res)
}

// freeResources releases res (nil = nothing), instance id's of server,
// outside p.mu: its ports, its directory, and a predecessor's run
// directory that held it if it is now empty.
func (p *Pool) freeResources(server, id string, res *resources) {
	if res == nil {
		return
	}
	if err := res.release(); err != nil {
		p.log.Warn("cannot remove an instance's private directory", "server", server, "instance", id, "dir", res.tmpdir, "err", err)
	}
	if res.tmpdir != "" {
		p.dropRunIfEmpty(filepath.Dir(res.tmpdir))
	}
}
