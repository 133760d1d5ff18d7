package nixresolve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"mcpx.dev/mcpx/nixresolve/nixspec"
)

// Entry is one cache entry, as `mcpx nix ls` shows it.
type Entry struct {
	Program
	// Pinned: the spec itself names a revision or a narHash
	// (github:owner/repo/<40 hex>, ?rev=…, ?narHash=…), so a refresh
	// cannot change what it runs. A floating spec (a branch, a path that
	// is edited) stays on what it resolved to until refreshed.
	Pinned bool
}

// Key returns the cache key of spec: the spec with a relative path ref made
// absolute against Options.Dir. Two servers whose commands have one key
// share one cache entry.
func (r *Resolver) Key(spec string) (string, error) {
	s, err := nixspec.Parse(spec)
	if err != nil {
		return "", &Error{Spec: spec, Err: ErrSpec, Msg: err.Error()}
	}
	return absolute(s, r.opts.Dir).String(), nil
}

// Entries lists the cache, sorted by spec. It runs no nix and checks
// nothing in the store.
func (r *Resolver) Entries() []Entry {
	r.mu.Lock()
	out := make([]Entry, 0, len(r.entries))
	for _, p := range r.entries {
		out = append(out, Entry{Program: p, Pinned: pinnedSpec(p.Spec)})
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Spec, b.Spec) })
	return out
}

// Environments returns the captured execution environments, sorted by
// their key (DevEnv.Environment). It runs no nix.
func (r *Resolver) Environments() []DevEnv {
	r.mu.Lock()
	out := make([]DevEnv, 0, len(r.envs))
	for _, d := range r.envs {
		out = append(out, d)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b DevEnv) int { return strings.Compare(a.Environment, b.Environment) })
	return out
}

// Refresh resolves spec again — locks its ref anew, evaluates and builds —
// and replaces its cache entry: the way a floating spec moves on. It
// returns the entry it replaced (zero if there was none) and the new one.
// The new GC root exists before the old one is removed, so the running
// program stays alive to nix's collector throughout; an unchanged lock
// keeps the same root. A resolution already running when Refresh is called
// may have locked the ref before the change the caller wants, so Refresh
// waits it out and starts its own. On failure the old entry stays.
func (r *Resolver) Refresh(ctx context.Context, spec string) (prev, next Program, err error) {
	key, err := r.Key(spec)
	if err != nil {
		return Program{}, Program{}, err
	}
	r.mu.Lock()
	running := r.flights[key]
	r.mu.Unlock()
	if running != nil {
		if _, err := running.wait(ctx, spec); err != nil && ctx.Err() != nil {
			return Program{}, Program{}, err
		}
	}
	// A resolution started after the one above began after this call: it
	// is as fresh as one of our own, so join it.
	f := r.join(key, spec)
	if f == nil {
		return Program{}, Program{}, &Error{Spec: spec, Err: ErrClosed, Msg: "the daemon is shutting down"}
	}
	next, err = f.wait(ctx, spec)
	if err != nil {
		return Program{}, Program{}, err
	}
	return f.prev, next, nil
}

// GC drops the cache entries whose spec (a Key, or an environment's
// DevEnv.Environment) keep rejects, removes their
// GC roots, and removes any other file in the roots directory that no
// remaining entry names (left by a crash between a build and the cache
// write). nix's own collector frees the store paths later (`nix store gc`).
// It returns the dropped entries, sorted by spec.
func (r *Resolver) GC(keep func(spec string) bool) ([]Program, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var dropped []Program
	for k, p := range r.entries {
		if _, running := r.flights[k]; running || keep(k) {
			continue
		}
		delete(r.entries, k)
		dropped = append(dropped, p)
	}
	for k, d := range r.envs {
		if _, running := r.envFlights[k]; running || keep(k) {
			continue
		}
		delete(r.envs, k)
		removeProfile(d.Root)
		if strings.HasPrefix(k, nixspec.EnvIsolated+":") {
			os.RemoveAll(r.isolatedDir(k)) // its generated flake
		}
		dropped = append(dropped, Program{Spec: k, Root: d.Root, Locked: d.Locked, ResolvedAt: d.CapturedAt})
	}
	var errs []error
	if len(dropped) > 0 {
		if err := r.saveLocked(); err != nil {
			errs = append(errs, fmt.Errorf("saving the nix cache: %w", err))
		}
	}
	live := map[string]bool{}
	for _, p := range r.entries {
		live[filepath.Base(p.Root)] = true
	}
	for _, d := range r.envs {
		live[filepath.Base(d.Root)] = true
	}
	dir := filepath.Join(r.opts.CacheDir, "roots")
	names, err := os.ReadDir(dir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, de := range names {
		// A running resolution's root exists before its entry does, and
		// its name is not known before nix locks the ref: while any runs,
		// strays wait for the next GC.
		// A captured environment's root is a profile: its generation
		// links (<root>-<n>-link) live with it.
		name := de.Name()
		if i := strings.LastIndex(strings.TrimSuffix(name, "-link"), "-"); strings.HasSuffix(name, "-link") && i > 0 {
			name = name[:i]
		}
		if live[name] || len(r.flights) > 0 || len(r.envFlights) > 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, de.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	slices.SortFunc(dropped, func(a, b Program) int { return strings.Compare(a.Spec, b.Spec) })
	for _, p := range dropped {
		r.log.Info("nix cache entry dropped", "spec", p.Spec, "path", p.StorePath)
	}
	return dropped, errors.Join(errs...)
}

// Pinned reports whether spec names an exact revision or content hash
// (github:owner/repo/<40 hex>, ?rev=…, ?narHash=…): no refresh can change
// what such a spec runs. It runs no nix.
func Pinned(spec string) bool { return pinnedSpec(spec) }

// hex40 is a full git commit hash.
var hex40 = regexp.MustCompile(`^[0-9a-f]{40}$`)

// pinnedSpec reports whether spec names an exact revision or content hash:
// a ?rev= or ?narHash= parameter, or a github:/gitlab:/sourcehut: ref whose
// third segment is a full commit hash.
func pinnedSpec(spec string) bool {
	s, err := nixspec.Parse(spec)
	if err != nil {
		return false
	}
	ref, query, _ := strings.Cut(s.Ref, "?")
	for _, kv := range strings.Split(query, "&") {
		if k, v, _ := strings.Cut(kv, "="); (k == "rev" || k == "narHash") && v != "" {
			return true
		}
	}
	scheme, rest, ok := strings.Cut(ref, ":")
	if !ok || (scheme != "github" && scheme != "gitlab" && scheme != "sourcehut") {
		return false
	}
	parts := strings.Split(rest, "/")
	return len(parts) == 3 && hex40.MatchString(parts[2])
}
