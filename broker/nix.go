package broker

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/nixresolve/nixspec"
)

// NixProgram is a nix: program spec's cache entry (nixresolve.Entry): the
// locked URL, rev and narHash, the store path and the program to exec,
// the GC root and when it was resolved; Pinned if the spec itself names a
// rev or narHash, so that no refresh moves it.
type NixProgram nixresolve.Entry

// nixProgram is p with its spec's pin.
func nixProgram(p nixresolve.Program) NixProgram {
	return NixProgram{Program: p, Pinned: nixresolve.Pinned(p.Spec)}
}

// NixEnvironment is a captured execution environment (nixresolve.DevEnv):
// its key, lock or file hash, variables, GC root and capture time.
type NixEnvironment nixresolve.DevEnv

// NixServer is a server whose command is a nix: spec, or whose execution
// environment is a nix one (flake:, shell:), as `mcpx nix ls` shows it: the
// spec and environment as configured and what each resolved to, if it has.
type NixServer struct {
	Server   string
	Spec     string // the command as configured, if it is a nix: spec
	Pinned   bool   // the spec names a rev or narHash (nixresolve.Pinned)
	Resolved bool
	// Program is the cache entry when Resolved.
	Program NixProgram
	// Environment is the environment as configured, if it is a nix one;
	// Env its captured variables, lock and GC root once Captured (its
	// first spawn).
	Environment string
	Captured    bool
	Env         NixEnvironment
}

// NixList is the daemon's nix servers and cache.
type NixList struct {
	Servers []NixServer // sorted by name
	// Unreferenced are cache entries no configured server's command names
	// now, and UnreferencedEnvironments the captured environments none
	// uses: what NixGC would drop.
	Unreferenced             []NixProgram
	UnreferencedEnvironments []NixEnvironment
}

// NixRefreshed is what NixRefresh did.
type NixRefreshed struct {
	Server   string
	Previous NixProgram // zero if the spec had not been resolved
	Current  NixProgram
	// Changed: the program is another path; the servers in Replaced (every
	// server whose command is this spec) have their instances drained and
	// replaced, so the next call runs the new program.
	Changed  bool
	Replaced []string
	// Environment is the server's execution environment when it is a nix
	// one (flake:, shell:), captured again too; EnvironmentChanged: its
	// variables changed, and Replaced includes every server using it.
	Environment        string
	EnvironmentChanged bool
}

// NixList lists the servers whose command is a nix: spec or whose
// environment is a nix one, with what each resolved to, and the cache
// entries and environments no server references. It runs no nix.
func (b *Broker) NixList() NixList {
	cfg := b.currentConfig()
	out := NixList{Servers: []NixServer{}, Unreferenced: []NixProgram{}, UnreferencedEnvironments: []NixEnvironment{}}
	refs := map[string]bool{}
	for _, name := range sortedNames(cfg.Servers) {
		s := cfg.Servers[name]
		ns := NixServer{Server: name}
		if nixspec.Is(s.Command) {
			ns.Spec, ns.Pinned = s.Command, nixresolve.Pinned(s.Command)
			if b.nix != nil {
				if key, err := b.nix.Key(s.Command); err == nil {
					refs[key] = true
				}
				var p nixresolve.Program
				p, ns.Resolved = b.nix.Cached(s.Command)
				ns.Program = NixProgram{Program: p, Pinned: ns.Pinned}
			}
		}
		if s.Environment == config.EnvironmentAuto {
			ns.Environment = s.Environment // its directories' are its instances'
		} else if es, err := nixspec.ParseEnvironment(poolEnvironment(s)); err == nil && es.Kind != nixspec.EnvHost {
			ns.Environment = poolEnvironment(s)
			if b.nix != nil {
				if key, err := b.nix.EnvironmentKey(poolEnvironment(s)); err == nil {
					refs[key] = true
				}
				var d nixresolve.DevEnv
				d, ns.Captured = b.nix.CachedEnvironment(poolEnvironment(s))
				ns.Env = NixEnvironment(d)
			}
		}
		if ns.Spec != "" || ns.Environment != "" {
			out.Servers = append(out.Servers, ns)
		}
	}
	if b.nix != nil {
		for _, key := range b.instanceEnvironments() {
			refs[key] = true
		}
		for _, e := range b.nix.Entries() {
			if !refs[e.Spec] {
				out.Unreferenced = append(out.Unreferenced, NixProgram(e))
			}
		}
		for _, d := range b.nix.Environments() {
			if !refs[d.Environment] {
				out.UnreferencedEnvironments = append(out.UnreferencedEnvironments, NixEnvironment(d))
			}
		}
	}
	return out
}

// NixRefresh resolves server's nix: command again (nixresolve.Refresh: a
// new lock, a build) and, when that changed the program, drains and
// replaces the instances of every server whose command is that spec, as a
// config reload does for a changed definition: each server's revision is
// bumped and the pool, seeing changed definitions, stops their instances
// once their calls are done; the next call spawns the new store path.
// A server whose environment is a nix one (flake:, shell:) has it captured
// again too, and a change of its variables replaces every server using it
// the same way. KindNotFound for an unknown server, KindBadRequest for one
// with neither a nix: command nor a nix environment; a failed resolution
// keeps the old program and environment running.
func (b *Broker) NixRefresh(ctx context.Context, server string) (NixRefreshed, error) {
	const op = "refresh nix command"
	cfg := b.currentConfig()
	s := cfg.Servers[server]
	if s == nil {
		return NixRefreshed{}, b.notFound(server, Caller{Rights: rights.All()})
	}
	if b.nix == nil {
		return NixRefreshed{}, &Error{Kind: KindBadRequest, Op: op, Server: server,
			Msg: "this daemon has no nix resolver"}
	}
	isSpec := nixspec.Is(s.Command)
	envKey, _ := b.nix.EnvironmentKey(poolEnvironment(s))
	auto := s.Environment == config.EnvironmentAuto
	if !isSpec && envKey == "" && !auto {
		return NixRefreshed{}, &Error{Kind: KindBadRequest, Op: op, Server: server,
			Msg: "neither the server's command nor its environment is a nix one; there is nothing to refresh"}
	}
	out := NixRefreshed{Server: server}
	if isSpec {
		prev, next, err := b.nix.Refresh(ctx, s.Command)
		if err != nil {
			return NixRefreshed{}, nixRefreshError(ctx, op, server, "command", err)
		}
		// Both carry the pin of the spec as configured: a refresh keeps
		// the spec, only what it resolves to moves.
		pinned := nixresolve.Pinned(next.Spec)
		out.Previous = NixProgram{Program: prev, Pinned: pinned}
		out.Current = NixProgram{Program: next, Pinned: pinned}
		out.Changed = prev.Path != next.Path
	}
	if envKey != "" {
		prev, next, err := b.nix.RefreshEnvironment(ctx, poolEnvironment(s))
		if err != nil {
			return NixRefreshed{}, nixRefreshError(ctx, op, server, "environment", err)
		}
		out.Environment, out.EnvironmentChanged = poolEnvironment(s), !maps.Equal(prev.Vars, next.Vars)
	}
	if auto {
		changed, err := b.refreshAuto(ctx, server)
		if err != nil {
			return NixRefreshed{}, nixRefreshError(ctx, op, server, "environment", err)
		}
		out.Environment, out.EnvironmentChanged = s.Environment, changed
	}
	if !out.Changed && !out.EnvironmentChanged {
		return out, nil
	}
	b.setMu.Lock()
	defer b.setMu.Unlock()
	b.mu.Lock()
	for _, name := range sortedNames(b.cfg.Servers) {
		d := b.cfg.Servers[name]
		key, err := b.nix.Key(d.Command)
		sameProgram := out.Changed && err == nil && nixspec.Is(d.Command) && key == out.Current.Spec
		ek, _ := b.nix.EnvironmentKey(d.Environment)
		sameEnv := out.EnvironmentChanged && ((ek != "" && ek == envKey) || (auto && name == server))
		if sameProgram || sameEnv {
			b.revs[name]++
			out.Replaced = append(out.Replaced, name)
		}
	}
	b.mu.Unlock()
	b.log.Info("nix refresh changed what a server runs; replacing instances", "server", server,
		"spec", out.Current.Spec, "from", out.Previous.StorePath, "to", out.Current.StorePath, "rev", out.Current.Locked.Rev,
		"environment", out.Environment, "environmentChanged", out.EnvironmentChanged, "servers", out.Replaced)
	b.applyServers()
	return out, nil
}

// nixRefreshError is a failed refresh of server's command or environment
// (what): the running instances keep what they run.
func nixRefreshError(ctx context.Context, op, server, what string, err error) error {
	e := &Error{Kind: KindChildFailed, Op: op, Server: server, Err: err,
		Msg:     "resolving the server's nix " + what + " again failed; its instances keep what they run",
		Private: err.Error()}
	switch {
	case errors.Is(err, nixresolve.ErrTimeout):
		e.Kind, e.Hint = KindTimeout, "raise nix.timeout in the config for a cold build"
	case errors.Is(err, nixresolve.ErrClosed):
		e.Kind = KindUnavailable
	case ctx.Err() != nil:
		e.Kind, e.Msg, e.Private = KindCanceled, "the caller went away; the resolution goes on and lands in the cache", ""
	}
	return e
}

// instanceEnvironments are the cache keys of the nix environments the
// pool's instances run in: those of an "auto" server are its
// directories', named by no config.
func (b *Broker) instanceEnvironments() []string {
	var keys []string
	for _, in := range b.pool.Instances() {
		if in.Program == nil || in.Program.Environment == "" {
			continue
		}
		if key, err := b.nix.EnvironmentKey(in.Program.Environment); err == nil && key != "" {
			keys = append(keys, key)
		}
	}
	return keys
}

// NixGC drops the nix cache entries no configured server's command or
// environment names, and no instance runs in,
// with their GC roots (nixresolve.GC), and returns them. A server added
// later with such a spec resolves it again.
func (b *Broker) NixGC() ([]NixProgram, error) {
	if b.nix == nil {
		return nil, &Error{Kind: KindBadRequest, Op: "nix gc", Msg: "this daemon has no nix resolver"}
	}
	cfg := b.currentConfig()
	var keys []string
	for _, s := range cfg.Servers {
		if key, err := b.nix.EnvironmentKey(poolEnvironment(s)); err == nil && key != "" {
			keys = append(keys, key)
		}
		if !nixspec.Is(s.Command) {
			continue
		}
		if key, err := b.nix.Key(s.Command); err == nil {
			keys = append(keys, key)
		}
	}
	keys = append(keys, b.instanceEnvironments()...)
	gone, err := b.nix.GC(func(spec string) bool { return slices.Contains(keys, spec) })
	var dropped []NixProgram
	for _, p := range gone {
		dropped = append(dropped, nixProgram(p))
	}
	if err != nil {
		return dropped, &Error{Kind: KindInternal, Op: "nix gc", Msg: "cleaning the nix cache failed", Err: err}
	}
	return dropped, nil
}

// startRefresher starts the nix.refresh worker: with "on-reload" it runs a
// pass after each config reload, with an interval on each tick; with
// "never" (or no resolver) there is none. One worker, one pass at a time,
// stopped by Close.
func (b *Broker) startRefresher(nc config.Nix) {
	b.refreshPolicy = nc.Refresh
	every := nc.RefreshInterval()
	if b.nix == nil || (b.refreshPolicy != config.NixRefreshOnReload && every <= 0) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.refreshNow, b.refreshStop, b.refreshDone = make(chan struct{}, 1), cancel, make(chan struct{})
	go func() {
		defer close(b.refreshDone)
		var tick <-chan time.Time
		if every > 0 {
			t := time.NewTicker(every)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-b.refreshNow:
				b.refreshInUse(ctx, "config reload")
			case <-tick:
				b.refreshInUse(ctx, "nix.refresh interval")
			}
		}
	}()
}

// stopRefresher stops the worker and waits for it; a pass in progress has
// its nix processes killed and changes nothing.
func (b *Broker) stopRefresher() {
	if b.refreshDone == nil {
		return
	}
	b.refreshStop()
	<-b.refreshDone
}

// refreshInUse is one nix.refresh pass: every nix: command and execution
// environment a configured server uses, and that was resolved before, is
// resolved again (a new lock, a build or capture); the servers whose
// program or environment changed are drained and replaced, as by `mcpx
// nix refresh`. A spec nobody has run yet is left for its first spawn. A
// failure keeps the old program and is logged once until it changes or
// heals.
func (b *Broker) refreshInUse(ctx context.Context, why string) {
	cfg := b.currentConfig()
	users := map[string][]string{} // spec or environment key -> its servers
	written := map[string]string{} // key -> the value as configured
	for _, name := range sortedNames(cfg.Servers) {
		s := cfg.Servers[name]
		if nixspec.Is(s.Command) {
			if key, err := b.nix.Key(s.Command); err == nil {
				users[key] = append(users[key], name)
				written[key] = s.Command
			}
		}
		if key, err := b.nix.EnvironmentKey(poolEnvironment(s)); err == nil && key != "" {
			users[key] = append(users[key], name)
			written[key] = poolEnvironment(s)
		}
	}
	b.log.Debug("nix refresh pass", "why", why, "specs", len(users))
	var replace []string
	for _, key := range slices.Sorted(maps.Keys(users)) {
		changed, err := b.refreshOne(ctx, written[key])
		if ctx.Err() != nil {
			return
		}
		b.noteRefresh(key, why, err)
		if changed {
			replace = append(replace, users[key]...)
		}
	}
	if len(replace) == 0 {
		return
	}
	b.setMu.Lock()
	defer b.setMu.Unlock()
	b.mu.Lock()
	slices.Sort(replace)
	replace = slices.Compact(replace)
	for _, name := range replace {
		b.revs[name]++
	}
	b.mu.Unlock()
	b.log.Info("nix refresh changed programs; replacing instances", "why", why, "servers", replace)
	b.applyServers()
}

// refreshOne resolves one spec or environment again if it was resolved
// before, and says whether what it gives changed.
func (b *Broker) refreshOne(ctx context.Context, v string) (bool, error) {
	if nixspec.Is(v) {
		if _, ok := b.nix.Cached(v); !ok {
			return false, nil
		}
		prev, next, err := b.nix.Refresh(ctx, v)
		return err == nil && prev.Path != next.Path, err
	}
	if _, ok := b.nix.CachedEnvironment(v); !ok {
		return false, nil
	}
	prev, next, err := b.nix.RefreshEnvironment(ctx, v)
	return err == nil && !maps.Equal(prev.Vars, next.Vars), err
}

// noteRefresh logs a failed refresh of key once per distinct failure, and
// its recovery.
func (b *Broker) noteRefresh(key, why string, err error) {
	b.mu.Lock()
	last, failed := b.refreshErrs[key]
	switch {
	case err == nil:
		delete(b.refreshErrs, key)
	case last != err.Error():
		if b.refreshErrs == nil {
			b.refreshErrs = map[string]string{}
		}
		b.refreshErrs[key] = err.Error()
	}
	b.mu.Unlock()
	switch {
	case err == nil && failed:
		b.log.Info("nix refresh works again", "spec", key, "why", why)
	case err != nil && last != err.Error():
		b.log.Warn("nix refresh failed; the servers keep the program they run", "spec", key, "why", why, "err", err)
	}
}
