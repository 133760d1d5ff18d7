package pool

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"mcpx.dev/mcpx/pool/portalloc"
)

// An adopted instance's per-instance resources (Adopt, AdoptSurvivors).
// Its record names its ports and its private directory; the successor
// claims the same ports, unbound (the child listens on them), keeps the
// directory, and makes the instance's spec with them as its first start
// did (Pool.prepare). The identity check (adoptGen) then tells whether the
// definition changed. The directory stays where it is, in the
// predecessor's run directory, which becomes this pool's to remove (once
// empty, or at Close) and which the sweep of dead daemons' runs leaves.

// reclaim takes back, for h's child, the resources h records: its ports,
// claimed under its id, and its private directory if it is one this
// pool's options would have made. lost says what could not be taken back
// ("" = nothing). res is nil if h records none; the caller owns it: it
// becomes the adopted instance's, or is released once a child not
// adopted is gone.
func (p *Pool) reclaim(h HandoffChild) (res *resources, lost string) {
	if h.Tmpdir == "" && len(h.Ports) == 0 {
		return nil, ""
	}
	res = &resources{ports: map[string]*portalloc.Hold{}}
	for _, name := range slices.Sorted(maps.Keys(h.Ports)) {
		hold, err := p.ports.Claim(h.ID, h.Ports[name])
		if err != nil {
			if lost == "" {
				lost = fmt.Sprintf("allocate.%s: %v", name, err)
			}
			continue
		}
		res.ports[name] = hold
	}
	if h.Tmpdir != "" {
		if run := p.runDirOf(h.Tmpdir, h.ID); run != "" {
			res.tmpdir = h.Tmpdir
			p.keepRuns(run)
		} else if lost == "" {
			lost = fmt.Sprintf("its ${mcpx.tmpdir} %s is gone, or not in a directory this daemon makes (pool.tmpDir changed?)", h.Tmpdir)
		}
	}
	return res, lost
}

// runDirOf is the run directory holding dir, if dir is a private
// directory of instance id that this pool's options would have made (in
// its run directory or a predecessor's); else "".
func (p *Pool) runDirOf(dir, id string) string {
	run := filepath.Dir(dir)
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || !strings.HasPrefix(filepath.Base(dir), id+"-") || !p.isRunDir(run) {
		return ""
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return run
}

// fitResources says why what h records does not fit def ("" = it does):
// the same allocation names, each port in its range, and a private
// directory when def uses ${mcpx.tmpdir}; none of them when def is not
// per-instance. A confined child always has its private directory.
func fitResources(def *Server, h HandoffChild) string {
	recorded := h.Tmpdir != "" || len(h.Ports) > 0
	confined := h.Sandbox != nil
	per := perInstance(def) || confined
	if !per || !recorded {
		if per != recorded {
			return "its definition changed"
		}
		return ""
	}
	if !slices.Equal(slices.Sorted(maps.Keys(def.Allocate)), slices.Sorted(maps.Keys(h.Ports))) || (usesTmpDir(def) || confined) != (h.Tmpdir != "") {
		return "its definition changed"
	}
	for _, name := range slices.Sorted(maps.Keys(h.Ports)) {
		if rg, port := def.Allocate[name].Range, h.Ports[name]; port < rg[0] || port > rg[1] {
			return fmt.Sprintf("its definition changed: allocate.%s.range [%d, %d] no longer holds its port %d", name, rg[0], rg[1], port)
		}
	}
	return ""
}

// adoptSpecLocked gives inst, an adopted instance of a per-instance
// definition, res and the spawn spec its first start made with them, or
// says why it cannot. Called with Pool.mu held.
func (p *Pool) adoptSpecLocked(inst *instance, res *resources) string {
	v := inst.vars()
	v.tmpdir, v.alloc = res.values()
	sp, err := resolveSpawn(inst.def, v)
	if err != nil {
		return err.Error()
	}
	inst.res, inst.spec, inst.specReady = res, sp, true
	return ""
}
