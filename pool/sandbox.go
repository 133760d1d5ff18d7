package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/internal/placeholder"
	"mcpx.dev/mcpx/pool/confine"
	"mcpx.dev/mcpx/pool/execid"
	"mcpx.dev/mcpx/pool/proc"
	"mcpx.dev/mcpx/pool/proc/egress"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// Confined children (Target.Sandbox; package confine). The broker decides
// per caller whether an instance's child is confined and to what (a
// confine.Spec); the Spec's fingerprint is part of the instance's key, so
// two callers whose Specs differ never share a child, and an unconfined
// child keeps the key it always had. At each spawn the pool finishes the
// Spec with the instance's private directory (always made for a confined
// instance: it is the child's HOME and TMPDIR), its program's paths, its
// own environment and its ports, and package proc starts the child
// through the sandbox's helper. A child whose policy lists hosts gets a
// listener on its own loopback, which the pool's egress proxy serves under
// the Spec's allowlist until the child is gone.

// key is the instance key t names.
func (t Target) key() instKey { return instKey{t.Server, t.Key, t.Sandbox.Fingerprint(), t.Account} }

// SandboxStatus is what status shows of a confined instance.
type SandboxStatus struct {
	Fingerprint string // the Spec's (confine.Spec.Fingerprint): part of the instance's identity
	Why         string // confine.WhyConfig, WhyDefaults or WhyCaller
	Spec        confine.Spec
	// Enforcement is what confines the running child, feature by
	// feature; empty before its first start.
	Enforcement sandbox.Enforcement
	// Limit is which limit ended the last child ("limit: memory 4GiB"),
	// "" if none did.
	Limit string
}

// sandboxStatusLocked is inst's SandboxStatus; nil for an unconfined one.
func (i *instance) sandboxStatusLocked() *SandboxStatus {
	if i.sandbox == nil {
		return nil
	}
	s := &SandboxStatus{Fingerprint: i.sandbox.Fingerprint(), Why: i.sandbox.Why, Spec: *i.sandbox, Limit: i.lastLimit}
	if c := i.gen.cell(); c != nil {
		s.Enforcement = c.Enforcement()
	}
	return s
}

// cell is g's child's confinement, nil if it has none.
func (g *generation) cell() *sandbox.Cell {
	if g == nil || g.proc == nil {
		return nil
	}
	return g.proc.Sandbox()
}

// confineCommand gives cmd, the command of inst's child as sp says, the
// policy inst's Spec makes for it. prog is what Options.Resolve said of
// the program (nil: a plain command).
func (p *Pool) confineCommand(ctx context.Context, inst *instance, sp spawnSpec, prog *Program, cmd *proc.Command) error {
	p.mu.Lock()
	var tmp string
	var ports []uint16
	if r := inst.res; r != nil {
		tmp = r.tmpdir
		for _, name := range slices.Sorted(maps.Keys(r.ports)) {
			ports = append(ports, uint16(r.ports[name].Port()))
		}
	}
	p.unlock()
	pol, err := p.policyFor(ctx, inst, sp, prog, cmd, tmp, ports)
	if err != nil {
		return err
	}
	cmd.Env, cmd.Sandbox = pol.Env, &pol
	return nil
}

// policyFor is the policy inst's Spec makes for cmd, its child's command
// as sp says, with tmp its private directory and ports its allocations.
// A command that is not an absolute path is looked up on its PATH (and
// cmd.Path set to what is found).
func (p *Pool) policyFor(ctx context.Context, inst *instance, sp spawnSpec, prog *Program, cmd *proc.Command, tmp string, ports []uint16) (sandbox.Policy, error) {
	exe := cmd.Path
	if !filepath.IsAbs(exe) {
		if exe = proc.LookPath(exe, cmd.Env); exe == "" {
			return sandbox.Policy{}, fmt.Errorf("cannot run %q: not found on the child's PATH; %s", sp.command, proc.Hint(sp.command, proc.ErrNotFound))
		}
		cmd.Path = exe
	}
	reads := confine.ProgramReads(exe, cmd.Args, cmd.Dir)
	for _, store := range storePaths(prog) {
		if p.opts.Closure == nil {
			break
		}
		closure, err := p.opts.Closure(ctx, store)
		if err != nil {
			return sandbox.Policy{}, fmt.Errorf("server %q: sandbox: reading the store closure of %s: %w", inst.def.Name, store, err)
		}
		reads = append(reads, closure...)
	}
	goReads, goVars := confine.GoToolchain(exe, sp.env, p.opts.Env)
	reads = append(reads, goReads...)
	env := append(goVars, sp.env...) // the server's own variables win
	base := p.opts.Env
	if sp.isolated {
		// The isolated environment's PATH, not the host's.
		base = slices.DeleteFunc(slices.Clone(base), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
		env = append(slices.Clip(sp.devEnv), env...)
	}
	return inst.sandbox.Policy(confine.Facts{TmpDir: tmp, Program: reads, Env: env, Base: base, Ports: ports}), nil
}

// SandboxPolicy is the policy a child of t's instance would start with
// now, confined by t.Sandbox, with its private directory named
// ${mcpx.tmpdir} and its allocations unknown (for `mcpx sandbox show`).
// It starts nothing; resolving a nix: command may build it, within ctx.
func (p *Pool) SandboxPolicy(ctx context.Context, t Target) (sandbox.Policy, error) {
	p.mu.Lock()
	def := p.servers[t.Server]
	p.unlock()
	switch {
	case def == nil:
		return sandbox.Policy{}, p.perr("sandbox", t, ErrUnknownServer, "")
	case t.Sandbox == nil || def.Command == "" && def.Adapter == nil:
		return sandbox.Policy{}, p.perr("sandbox", t, ErrSpawnConfig, "the server's children are not confined for this caller")
	}
	inst := &instance{id: def.Name + "-0", key: t.key(), def: def, root: t.Root, cwd: t.Cwd, sandbox: t.Sandbox}
	v := inst.vars()
	v.tmpdir, v.alloc = placeholder.TmpDir, map[string]string{}
	for name := range def.Allocate {
		v.alloc[name] = "0"
	}
	sp, err := resolveSpawn(def, v)
	if err != nil {
		return sandbox.Policy{}, p.perr("sandbox", t, ErrSpawnConfig, err.Error())
	}
	if def.Adapter != nil {
		// Each command of its calls: each adds its executable's reads.
		return inst.sandbox.Policy(confine.Facts{TmpDir: placeholder.TmpDir, Env: sp.env, Base: p.opts.Env}), nil
	}
	prog, err := p.resolve(inst, &sp)
	if err != nil {
		return sandbox.Policy{}, p.startErr(t, err)
	}
	id := execid.Of(sp.command, execid.Options{Path: childPath(p.opts.Env, sp), Dir: sp.cwd, HashMax: p.opts.ExecHashMax, Args: sp.args})
	if !id.Missing() {
		sp.path = id.Path
	}
	cmd := sp.procCommand(p.opts.Env)
	pol, err := p.policyFor(ctx, inst, sp, prog, &cmd, placeholder.TmpDir, nil)
	if err != nil {
		return sandbox.Policy{}, p.perr("sandbox", t, ErrSpawnConfig, err.Error())
	}
	return pol, nil
}

// sandboxErr is a confined spawn's failure as the pool says it: a kernel
// that lacks what the policy needs names the server, the field and the
// feature.
func sandboxErr(server string, err error) string {
	var ne *sandbox.NotEnforcedError
	if errors.As(err, &ne) {
		return fmt.Sprintf("server %q: sandbox: %v", server, ne)
	}
	return fmt.Sprintf("server %q: sandbox: %v", server, err)
}

// serveEgress serves g's child's proxy listener, if it has one, under
// inst's allowlist; the generation's stop closes it.
func (p *Pool) serveEgress(inst *instance, g *generation, log *slog.Logger) {
	c := g.cell()
	if c == nil || c.Listener() == nil {
		return
	}
	s, err := p.egress.Serve(c.Listener(), egress.Binding{Server: inst.def.Name, Instance: inst.id, Allow: inst.sandbox.Allow})
	if err != nil {
		log.Warn("sandbox: the child's egress is not served: it reaches nothing", "err", err)
		return
	}
	g.egress = s
}

// resumeCell is h's child's confinement, resumed from what the earlier
// daemon handed over, with its proxy listener made of h.Proxy (which it
// closes: the listener holds a copy); nil for an unconfined child.
func resumeCell(h HandoffChild, log *slog.Logger) *sandbox.Cell {
	var ln net.Listener
	if h.Proxy != 0 {
		f := os.NewFile(uintptr(h.Proxy), "proxy-listener")
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			log.Warn("sandbox: the handed-over egress listener is unusable: the child reaches nothing", "err", err)
		}
		ln = l
	}
	if h.Sandbox == nil || h.Sandbox.State == nil {
		if ln != nil {
			ln.Close()
		}
		return nil
	}
	return sandbox.Resume(*h.Sandbox.State, ln)
}

// EgressCounts are each server's egress proxy decisions since the pool
// was made: connections allowed, refused (each logged) and failed.
func (p *Pool) EgressCounts() map[string]egress.Counts { return p.egress.Counts() }

// confineAdapter makes scope, that of inst's adapter, run each command
// its calls start confined by inst's Spec, as a child of the instance
// would be: the Spec finished with the command's program, the instance's
// private directory and its own variables, and mark.
func (p *Pool) confineAdapter(inst *instance, sp spawnSpec, mark string, scope *adapter.Scope) {
	p.mu.Lock()
	tmp := ""
	if r := inst.res; r != nil {
		tmp = r.tmpdir
	}
	p.unlock()
	markVar := proc.MarkEnv + "=" + mark
	scope.Env = append(inst.sandbox.Policy(confine.Facts{TmpDir: tmp, Env: sp.env, Base: p.opts.Env}).Env, markVar)
	scope.Run = proc.RunnerConfined(func(ctx context.Context, path string) (sandbox.Policy, error) {
		// Its executable and its directory, never what its arguments
		// name: they are the caller's, and an interpreter's first file
		// argument would make that file's directory readable.
		c := proc.Command{Path: path, Args: []string{path}, Dir: sp.cwd, Env: scope.Env}
		pol, err := p.policyFor(ctx, inst, sp, nil, &c, tmp, nil)
		pol.Env = append(pol.Env, markVar)
		return pol, err
	})
}

// storePaths are the store paths prog runs from: its package and its
// isolated environment's.
func storePaths(prog *Program) []string {
	var out []string
	if prog != nil && prog.StorePath != "" {
		out = append(out, prog.StorePath)
	}
	if prog != nil && prog.EnvStorePath != "" {
		out = append(out, prog.EnvStorePath)
	}
	return out
}
