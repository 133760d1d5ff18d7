package broker

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/nixresolve/nixspec"
	"mcpx.dev/mcpx/pool"
)

// applyServers hands the pool the current definitions, revisions included;
// the pool drains and replaces the instances of those that changed. The
// caller holds setMu, so that two updates reach the pool in order.
func (b *Broker) applyServers() {
	b.mu.RLock()
	cfg := b.cfg
	defs := make([]pool.Server, 0, len(cfg.Servers))
	for _, name := range sortedNames(cfg.Servers) {
		d := b.poolServer(name, cfg.Servers[name], cfg.Source, cfg.Defaults)
		d.Revision = b.revs[name]
		defs = append(defs, d)
	}
	b.oauth.SetServers(oauthServers(cfg, os.Getenv))
	b.mu.RUnlock()
	defs = append(defs, b.projects.projectDefs()...)
	b.pool.SetServers(defs)
}

// resolveCommand is the pool's Resolve hook: a nix: spec becomes its
// program's store path (with no nix process once cached: package
// nixresolve), a plain command stays as it is and is looked up on PATH at
// exec. A spec never falls back to PATH. An execution environment other
// than the host becomes its captured variables (cached the same way);
// "auto" is the one of dir, the child's working directory
// (autoEnvironment). The pool runs this in the spawning goroutine, so a
// slow resolution holds up only that start.
func resolveCommand(nix *nixresolve.Resolver) func(context.Context, string, string, string) (pool.Program, error) {
	return func(ctx context.Context, command, environment, dir string) (pool.Program, error) {
		prog := pool.Program{Path: command}
		if environment == config.EnvironmentAuto {
			var err error
			if environment, err = autoEnvironment(dir); err != nil {
				return prog, err
			}
		}
		if environment != "" && environment != nixspec.EnvHost {
			if nix == nil {
				return prog, fmt.Errorf("environment %s: this daemon has no nix resolver, so nix environments cannot be captured; use environment \"host\"", environment)
			}
			d, err := nix.Environment(ctx, environment)
			if err != nil {
				return prog, err
			}
			prog.Env, prog.Environment = d.EnvVars(), environment
			if isolated(environment) {
				if err := inIsolated(command, d); err != nil {
					return prog, err
				}
				prog.Isolated, prog.EnvStorePath = true, filepath.Dir(d.Vars["PATH"])
			}
			if nixresolve.HasShellHook(prog.Env) {
				prog.Wrap = nixresolve.ShellHookWrap
			}
			prog.EnvRev = cmp.Or(d.Locked.Rev, d.Locked.NarHash)
			if d.FileHash != "" {
				prog.EnvRev = "sha256:" + d.FileHash
			}
		}
		if !nixspec.Is(command) {
			return prog, nil
		}
		if nix == nil {
			return prog, fmt.Errorf("command %s: this daemon has no nix resolver, so nix: commands cannot run; use a plain command", command)
		}
		p, err := nix.Resolve(ctx, command)
		if err != nil {
			return prog, err
		}
		prog.Path, prog.Spec, prog.StorePath = p.Path, command, p.StorePath
		prog.Rev, prog.NarHash, prog.Pinned = p.Locked.Rev, p.Locked.NarHash, nixresolve.Pinned(command)
		return prog, nil
	}
}

// poolEnvironment is the environment the pool hands the Resolve hook for
// s: an isolated one names its packages, the command's (a nix: spec)
// first, then the dependencies (nixspec.Isolated).
func poolEnvironment(s *config.Server) string {
	if s.Environment != config.EnvironmentIsolated {
		return s.Environment
	}
	var pkgs []string
	if nixspec.Is(s.Command) {
		pkgs = append(pkgs, s.Command)
	}
	return nixspec.Isolated(append(pkgs, s.Dependencies...))
}

func isolated(environment string) bool {
	return strings.HasPrefix(environment, nixspec.EnvIsolated+":") || environment == nixspec.EnvIsolated
}

// inIsolated checks that command, run in the isolated environment d, is
// one of its programs: a nix: spec is its own package's, a path is run as
// written, a name must be under d's PATH (the host's is not searched).
func inIsolated(command string, d nixresolve.DevEnv) error {
	if nixspec.Is(command) || strings.Contains(command, "/") {
		return nil
	}
	bin := d.Vars["PATH"]
	if fi, err := os.Stat(filepath.Join(bin, command)); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return nil
	}
	return fmt.Errorf(`command %q is not in the isolated environment (%s holds only its packages' programs; the host's PATH is not searched): add the nix: package that provides it to the server's dependencies, e.g. "nix:nixpkgs#%s"`, command, bin, command)
}

// closureOf is the pool's Closure hook: a confined nix program reads its
// store closure. nil without a resolver (a nix: command does not start
// then anyway).
func closureOf(nix *nixresolve.Resolver) func(context.Context, string) ([]string, error) {
	if nix == nil {
		return nil
	}
	return nix.Closure
}

// poolServer is the pool's definition of server name, s as the config
// file at source (whose directory a relative openapi spec is in) gives it,
// under the daemon's config's defaults.
func (b *Broker) poolServer(name string, s *config.Server, source string, defaults config.Defaults) pool.Server {
	d := pool.Server{
		Name: name, Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd,
		URL: s.URL, Headers: s.Headers,
		InheritEnv: s.InheritEnv.Names, InheritAllEnv: s.InheritEnv.All,
		Environment:  poolEnvironment(s),
		Exclusive:    s.Sharing == config.SharingExclusive,
		Max:          s.Max,
		IdleTimeout:  s.IdleTimeout.D(),
		StartTimeout: s.StartTimeout.D(),
		Allocate:     poolAllocs(s.Allocate),
		Sampling:     s.Sampling,
		CallerRoots:  s.CallerRoots,
		Era:          eraOf(s.Protocol),
		ReadyStderr:  readyStderr(s.Ready),
		NoRoots:      !s.OffersRoots(),
		Adapter:      b.adapterOf(name, s, source),
		Confine:      confineSetting(s, defaults),
	}
	keepAlive(&d, s, defaults)
	return d
}

// readyStderr is r's stderr pattern; "" for none.
func readyStderr(r *config.Ready) string {
	if r == nil {
		return ""
	}
	return r.Stderr
}

// poolAllocs are a server's allocations as the pool takes them; the config
// has checked them.
func poolAllocs(m map[string]*config.Alloc) map[string]pool.Alloc {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]pool.Alloc, len(m))
	for name, a := range m {
		if a != nil && len(a.Range) == 2 {
			out[name] = pool.Alloc{Range: [2]int{a.Range[0], a.Range[1]}}
		}
	}
	return out
}

func sortedNames(m map[string]*config.Server) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// eraOf is the pool's era for a server's "protocol".
func eraOf(protocol string) string {
	switch protocol {
	case "handshake":
		return client.EraHandshake
	case "stateless":
		return client.EraStateless
	}
	return ""
}
