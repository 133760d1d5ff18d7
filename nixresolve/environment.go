package nixresolve

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"mcpx.dev/mcpx/nixresolve/nixspec"
)

// DevEnv is a captured execution environment: the variables a devShell (or
// shell.nix) exports, as `nix print-dev-env --json` reports them.
type DevEnv struct {
	Environment string `json:"environment"` // the key: with a relative path made absolute
	// Locked is the flake's lock (flake: environments).
	Locked Locked `json:"locked,omitzero"`
	// FileHash is the sha256 of the shell.nix the variables came from and
	// of the .nix files it may import (shellHash; shell: environments): an
	// edit to any of them is captured again. For an isolated environment
	// it is the sha256 of its generated flake.lock: what its packages
	// were locked to.
	FileHash   string            `json:"fileHash,omitempty"`
	Vars       map[string]string `json:"vars"`
	Root       string            `json:"root"` // the GC root of the shell's inputs (a profile in CacheDir/roots)
	CapturedAt time.Time         `json:"capturedAt"`
}

// ignoredVars are the variables of a captured shell that describe nix's
// build sandbox, not the shell: `nix develop` drops the same ones.
var ignoredVars = []string{
	"BASHOPTS", "HOME", "NIX_BUILD_TOP", "NIX_ENFORCE_PURITY", "NIX_LOG_FD", "NIX_REMOTE", "PPID",
	"SHELL", "SHELLOPTS", "SHLVL", "SSL_CERT_DIR", "SSL_CERT_FILE", "TEMP", "TEMPDIR", "TERM", "TMP",
	"TMPDIR", "TZ", "UID",
}

// Environment returns the captured variables of an execution environment
// (see nixspec.ParseEnvironment; host has none). It is captured once and cached
// with the programs: a flake's devShell by its ref until RefreshEnvironment
// (as a program spec, never following the flake behind the user's back), a
// shell.nix by the hash of its contents and its directory's .nix files
// (shellHash; reading them is the only work on a hit). A hit runs no nix. Concurrent captures of one
// environment share one nix process.
func (r *Resolver) Environment(ctx context.Context, env string) (DevEnv, error) {
	es, err := nixspec.ParseEnvironment(env)
	if err != nil {
		return DevEnv{}, &Error{Spec: env, Err: ErrSpec, Msg: err.Error(), noun: "environment"}
	}
	if es.Kind == nixspec.EnvHost {
		return DevEnv{Environment: nixspec.EnvHost}, nil
	}
	es = r.absEnv(es)
	key := es.String()
	var hash string
	if es.Kind == nixspec.EnvShell {
		if hash, err = shellHash(es.Ref); err != nil {
			return DevEnv{}, &Error{Spec: env, Err: ErrLock, Msg: "cannot read the shell file", Cause: err, Output: err.Error(), noun: "environment"}
		}
	}
	r.mu.Lock()
	d, ok := r.envs[key]
	r.mu.Unlock()
	if ok && (d.FileHash == hash || es.Kind == nixspec.EnvIsolated) && rootAlive(d.Root) {
		return d, nil
	}
	return r.captureShared(ctx, key, env, es)
}

// RefreshEnvironment captures env again (a new lock for a flake) and
// replaces its cache entry; on failure the old entry stays.
func (r *Resolver) RefreshEnvironment(ctx context.Context, env string) (prev, next DevEnv, err error) {
	es, err := nixspec.ParseEnvironment(env)
	if err != nil || es.Kind == nixspec.EnvHost {
		return DevEnv{}, DevEnv{Environment: nixspec.EnvHost}, err
	}
	es = r.absEnv(es)
	key := es.String()
	r.mu.Lock()
	prev = r.envs[key]
	r.mu.Unlock()
	if es.Kind == nixspec.EnvIsolated {
		r.forgetLock(key) // its packages are locked anew
	}
	next, err = r.captureShared(ctx, key, env, es)
	return prev, next, err
}

// CachedEnvironment returns the cache entry of env, if any, running no nix.
func (r *Resolver) CachedEnvironment(env string) (DevEnv, bool) {
	es, err := nixspec.ParseEnvironment(env)
	if err != nil || es.Kind == nixspec.EnvHost {
		return DevEnv{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.envs[r.absEnv(es).String()]
	return d, ok
}

// rootAlive reports whether a GC root still points into the store: an
// environment whose inputs were collected is captured again.
func rootAlive(root string) bool {
	_, err := os.Stat(root)
	return err == nil
}

func (r *Resolver) absEnv(es nixspec.Environment) nixspec.Environment {
	switch es.Kind {
	case nixspec.EnvFlake:
		s := absolute(nixspec.Spec{Ref: es.Ref, Attr: es.Attr}, r.opts.Dir)
		es.Ref, es.Attr = s.Ref, s.Attr
	case nixspec.EnvShell:
		if !filepath.IsAbs(es.Ref) {
			es.Ref = filepath.Join(r.opts.Dir, es.Ref)
		}
		es.Ref = filepath.Clean(es.Ref)
	case nixspec.EnvIsolated:
		pkgs := es.Packages()
		for i, p := range pkgs {
			if s, err := nixspec.Parse(p); err == nil {
				pkgs[i] = absolute(s, r.opts.Dir).String()
			}
		}
		es.Ref = strings.Join(pkgs, " ")
	}
	return es
}

// envFlight is one capture in progress; done is closed after env and err
// are set.
type envFlight struct {
	done chan struct{}
	env  DevEnv
	err  error
}

// captureShared captures key, joining a capture already running.
func (r *Resolver) captureShared(ctx context.Context, key, written string, es nixspec.Environment) (DevEnv, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return DevEnv{}, &Error{Spec: written, Err: ErrClosed, Msg: "the daemon is shutting down", noun: "environment"}
	}
	f := r.envFlights[key]
	if f == nil {
		f = &envFlight{done: make(chan struct{})}
		r.envFlights[key] = f
		r.wg.Go(func() {
			cctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
			defer cancel()
			start := time.Now()
			d, err := r.capture(cctx, key, written, es)
			r.mu.Lock()
			defer r.mu.Unlock()
			delete(r.envFlights, key)
			f.env, f.err = d, err
			// Waiters wake once the cache, its file and the roots say
			// what they are told.
			defer close(f.done)
			if err != nil {
				r.stats.CaptureFailed++
				return
			}
			r.stats.Captured++
			old := r.envs[key]
			r.envs[key] = d
			if serr := r.saveLocked(); serr != nil {
				r.log.Warn("nix cache not saved; the next start captures again", "file", r.file, "err", serr)
			}
			if old.Root != "" && old.Root != d.Root {
				removeProfile(old.Root)
			}
			r.log.Info("nix environment captured", "environment", key, "vars", len(d.Vars),
				"rev", d.Locked.Rev, "took", time.Since(start).Round(time.Millisecond))
		})
	}
	r.mu.Unlock()
	select {
	case <-f.done:
		return f.env, f.err
	case <-ctx.Done():
		return DevEnv{}, fmt.Errorf("capturing environment %s: %w", written, context.Cause(ctx))
	}
}

// removeProfile removes a profile link made by --profile and its
// generation links (<root>-<n>-link).
func removeProfile(root string) {
	links, _ := filepath.Glob(root + "-*-link")
	for _, l := range append(links, root) {
		os.Remove(l)
	}
}

// printDevEnv is what `nix print-dev-env --json` prints that we use.
type printDevEnv struct {
	Variables map[string]struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"variables"`
}

// capture runs nix print-dev-env for es (a flake locked first, as a program
// spec is) with a profile in the roots directory as the GC root.
func (r *Resolver) capture(ctx context.Context, key, written string, es nixspec.Environment) (DevEnv, error) {
	fail := func(kind error, msg, stderr string, err error) (DevEnv, error) {
		e := &Error{Spec: written, Err: kind, Msg: msg, Output: nixMessage(stderr), Cause: err, noun: "environment"}
		switch {
		case notFound(err):
			e.Err, e.Output = ErrNoNix, ""
			e.Msg = "needs Nix on the broker machine; install Nix or use environment \"host\""
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			e.Err = ErrTimeout
			e.Msg = fmt.Sprintf("%s: nix did not finish within %s (nix.timeout); it was killed", msg, r.opts.Timeout)
		case r.ctx.Err() != nil:
			e.Err, e.Msg = ErrClosed, "the daemon is shutting down"
		}
		return DevEnv{}, e
	}
	if es.Kind == nixspec.EnvIsolated {
		return r.captureIsolated(ctx, key, es, fail)
	}
	d := DevEnv{Environment: key}
	var args []string
	var id string
	switch es.Kind {
	case nixspec.EnvFlake:
		out, stderr, err := r.run(ctx, "flake", "metadata", "--json", es.Ref)
		if err != nil {
			return fail(ErrLock, "cannot lock flake reference "+es.Ref, stderr, err)
		}
		var md metadata
		if err := json.Unmarshal(out, &md); err != nil {
			return fail(ErrLock, "cannot read nix flake metadata's answer", "", err)
		}
		d.Locked = Locked{URL: cmp.Or(md.URL, es.Ref), Rev: md.Locked.Rev, NarHash: md.Locked.NarHash, LastModified: md.Locked.LastModified}
		args = []string{nixspec.Installable(d.Locked.URL, es.Attr)}
		id = d.Locked.URL + "\x00" + d.Locked.NarHash
	case nixspec.EnvShell:
		var err error
		if d.FileHash, err = shellHash(es.Ref); err != nil {
			return fail(ErrLock, "cannot read the shell file", err.Error(), err)
		}
		args = []string{"--file", es.Ref}
		id = d.FileHash
	}
	h := sha256.Sum256([]byte(key + "\x00" + id))
	d.Root = filepath.Join(r.opts.CacheDir, "roots", "env-"+hex.EncodeToString(h[:10]))
	out, stderr, err := r.run(ctx, append([]string{"print-dev-env", "--json", "--profile", d.Root}, args...)...)
	if err != nil {
		return fail(ErrBuild, "cannot capture the shell's environment (nix print-dev-env)", stderr, err)
	}
	var pe printDevEnv
	if err := json.Unmarshal(out, &pe); err != nil {
		return fail(ErrBuild, "cannot read nix print-dev-env's answer", "", err)
	}
	d.Vars = map[string]string{}
	for name, v := range pe.Variables {
		if v.Type != "exported" || slices.Contains(ignoredVars, name) {
			continue
		}
		var s string
		if json.Unmarshal(v.Value, &s) == nil {
			d.Vars[name] = s
		}
	}
	d.CapturedAt = time.Now()
	return d, nil
}

// EnvVars returns d's variables as KEY=VALUE, sorted.
func (d DevEnv) EnvVars() []string {
	out := make([]string, 0, len(d.Vars))
	for k, v := range d.Vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// EnvironmentKey returns the cache key of env (DevEnv.Environment): env
// with a relative path made absolute. "" for host.
func (r *Resolver) EnvironmentKey(env string) (string, error) {
	es, err := nixspec.ParseEnvironment(env)
	if err != nil {
		return "", &Error{Spec: env, Err: ErrSpec, Msg: err.Error(), noun: "environment"}
	}
	if es.Kind == nixspec.EnvHost {
		return "", nil
	}
	return r.absEnv(es).String(), nil
}

// ShellHookWrap is the argv that starts a command in an environment with a
// shellHook, as `nix develop -c` does: bash (the environment's, else the
// host's, found on the command's PATH) evaluates the hook, which the
// environment's variables hold as $shellHook, in the command's directory,
// then execs the command (appended, with its arguments). Unlike nix
// develop, the hook reads no stdin and writes to stderr: an MCP child's
// stdin and stdout are its protocol stream, a script's stdout its output.
// The hook sees the shell's exported variables, not its bash functions.
var ShellHookWrap = []string{"bash", "-c", `eval "$shellHook" </dev/null >&2; exec "$@"`, "mcpx-shellhook"}

// HasShellHook reports whether vars (KEY=VALUE, as EnvVars) hold a
// non-empty shellHook: the command is then started by ShellHookWrap.
func HasShellHook(vars []string) bool {
	for _, kv := range vars {
		if v, ok := strings.CutPrefix(kv, "shellHook="); ok && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}
