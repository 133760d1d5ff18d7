package runner

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/scripts"
	"mcpx.dev/mcpx/wire"
)

// InterruptGrace is how long a script has to end after the SIGINT an
// interrupted run passes on, before it is killed.
const InterruptGrace = 5 * time.Second

// DefaultLeaseTTL is the ttl of a run's own lease: how long its pid-scoped
// instances outlive a run killed outright.
const DefaultLeaseTTL = 30 * time.Second

// closeTimeout bounds releasing the lease and stopping the session at
// Close.
const closeTimeout = 30 * time.Second

// Options configure Start.
type Options struct {
	// Client reaches the broker. For a remote one (Client.Remote) the run
	// starts a relay (Relay) for the script.
	Client *client.Client
	// Caller is who the run calls as, as the CLI resolved it: Cwd is the
	// directory on the broker's machine. Its Session and ParentSession are
	// replaced by the run's (Session, ParentSession). A Lease set here is
	// the caller's: the run neither renews nor releases it; "" = the run
	// holds one of its own.
	Caller client.Caller
	// Session is the run's session; "" = a new one, "run-<random>", which
	// Close stops.
	Session string
	// ParentSession is the caller's own session ($MCPX_SESSION_ID).
	ParentSession string
	// Dir is where the script runs, on this machine; "" = Caller.Cwd. For
	// a remote broker the relay maps Dir (and what lies below it) to
	// Caller.Cwd.
	Dir string
	// Mappings are the client config's path mappings and Config its file,
	// for the relay to a remote broker.
	Mappings map[string]string
	Config   string
	// LeaseTTL is the ttl of the run's own lease, renewed every ttl/3;
	// 0 = DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Relay starts the relay for a local broker too: a script that speaks
	// HTTP itself (an interpreter's) needs $MCPX_URL and $MCPX_TOKEN,
	// which a local broker on its unix socket alone has not got. The
	// script gets the relay's per-run token, never the daemon's.
	Relay bool
	// OnRenewError is told of a failed renewal of the run's lease (it is
	// retried at the next tick); nil = ignored.
	OnRenewError func(lease string, err error)
}

// Run is one run's hold on the broker: its session, its lease and the
// relay. Start makes it; the caller must Close it.
type Run struct {
	bc     *client.Client
	caller client.Caller // the run's: its session, parent session and lease
	dir    string
	minted bool              // the session is the run's own: Close stops it
	lease  *client.HeldLease // the run's own lease; nil under the caller's
	relay  *Relay            // the way to a remote broker; nil for a local one
}

// Start takes the run's session, its lease and, for a remote broker, the
// relay. On error nothing is left held.
func Start(ctx context.Context, o Options) (r *Run, err error) {
	r = &Run{bc: o.Client, caller: o.Caller, dir: o.Dir, minted: o.Session == ""}
	if r.dir == "" {
		r.dir = o.Caller.Cwd
	}
	if o.Client.Remote() || o.Relay {
		// The script runs here, in this machine's directory, and reaches
		// the broker through the relay. The client config's mappings are
		// for a remote broker's directories only.
		mappings := o.Mappings
		if !o.Client.Remote() {
			mappings = nil
		}
		var relay *Relay
		relay, err = StartRelay(o.Client, RelayOptions{Local: r.dir, Remote: o.Caller.Cwd, Mappings: mappings, Config: o.Config})
		if err != nil {
			return nil, err
		}
		r.relay = relay
		defer func() {
			if err != nil { // r is nil by then
				relay.Close()
			}
		}()
	}
	r.caller.Session, r.caller.ParentSession = o.Session, o.ParentSession
	if r.minted {
		r.caller.Session = "run-" + rand.Text()
	}
	if r.caller.Lease == "" {
		ttl := o.LeaseTTL
		if ttl == 0 {
			ttl = DefaultLeaseTTL
		}
		if r.lease, err = o.Client.HoldLease(ctx, ttl, o.OnRenewError); err != nil {
			return nil, err
		}
		r.caller.Lease = r.lease.ID
	}
	return r, nil
}

// Caller is who the run calls as: the caller of Options with the run's
// session, parent session and lease.
func (r *Run) Caller() client.Caller { return r.caller }

// Close ends the run's hold: it stops renewing its own lease and releases
// it, stops a minted session (one with no instance left is not an error),
// and closes the relay. It uses ctx's values but not its cancellation (ctx
// may be the interrupt that ended the script), bounded by 30 s. The error
// joins what failed.
func (r *Run) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	var errs []error
	if r.lease != nil {
		if err := r.lease.Release(ctx); err != nil {
			errs = append(errs, fmt.Errorf("releasing lease %s: %w (it expires within %s)", r.lease.ID, err, r.lease.TTL))
		}
	}
	if r.minted {
		if err := r.bc.StopSession(ctx, "session:"+r.caller.Session); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("stopping session %s: %w", r.caller.Session, err))
		}
	}
	if r.relay != nil {
		r.relay.Close() //nolint:errcheck // only a second Close fails
	}
	return errors.Join(errs...)
}

// isNotFound reports whether err is the broker's 404: a session with no
// instance left has no record to stop.
func isNotFound(err error) bool {
	var p *wire.Problem
	return errors.As(err, &p) && p.Status == http.StatusNotFound
}

// Script is one script to run.
type Script struct {
	Runtime scripts.Runtime
	// Path is the script file; with Source, the name the generated
	// module is known by (in messages and the envelope).
	Path string
	// Snippet, when not "", is what runs instead of a file: `mcpx exec`'s
	// snippet, in the module scripts.ExecModule makes around it, resolved
	// as if it were a file in the run's Dir.
	Snippet string
	// Export, Args, Prefix, Suffix and Minimal are scripts.BundleOptions'.
	Export         string
	Args           json.RawMessage
	Prefix, Suffix []string
	Minimal        bool
	// Lib are the chain's lib/ directories, nearest first (scripts.LibDirs).
	Lib []string
	// Argv are the script's positional arguments.
	Argv []string
	// Interpreter, when not nil, runs Path as it is instead (a shell or
	// Python script: scripts.Interpreter): the command, then Path and
	// Argv. Nothing is bundled and no client fetched; Runtime, Export,
	// Args, Prefix, Suffix and Lib are not used, and no calls are
	// reported. The script reaches the broker at $MCPX_URL (the run
	// needs Options.Relay for a local one).
	Interpreter []string
	// Deps, when not nil, are where the script's packages come from
	// (scripts.Deps; its Runtime is set from Runtime).
	Deps *scripts.Deps
	// Env are variables (KEY=value) the script gets beyond the caller's
	// environment and before the run's own MCPX_* ones.
	Env []string
	// Wrap, if set, is the argv that starts the script's command (a
	// shell running its environment's hook first:
	// nixresolve.ShellHookWrap): Wrap[0], found on Env's PATH, with
	// Wrap[1:], then the command and its arguments. Not for a script the
	// kernel confines.
	Wrap []string
	// Cache is the run cache: the generated clients, and each run's own
	// directory, removed when it ends. It is created if missing.
	Cache string
	// Envelope captures stdout and stderr into the envelope instead of
	// passing them through, and reads the tool calls the script made.
	Envelope bool
	// MaxOutput bounds what Envelope keeps of stdout, and of stderr, in
	// bytes; what is beyond is dropped and said so. 0 = no bound.
	MaxOutput int
	// Started, when not nil, is told the script's pid once it runs.
	Started func(pid int)
	// Records, when not nil, are the run's fields: each log record the
	// script writes on stderr gets them (Fields.Enrich) as it is written,
	// before Envelope's MaxOutput counts it. They are told the script's
	// pid once it runs.
	Records *Fields
	// Sandbox, when not nil, confines the script (code mode's run for a
	// caller other than the owner): by deno's permissions, or on any
	// runtime by the kernel (Sandbox.Confine). A runtime neither confines
	// is refused, as are interpreters.
	Sandbox *Sandbox
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
}

// Sandbox confines a script to what its caller may reach: its
// environment is Env and the run's MCPX_* variables only, and it may read
// Read and the run's own directory, write only in that directory (the
// report of its calls), and reach only the run's relay (Options.Relay is
// required). On deno, deno's permissions hold it to that, and it runs no
// process, loads no native code and opens no other socket. With Confine,
// on any runtime, the kernel does (sandbox.go).
type Sandbox struct {
	Read []string
	Env  []string
	// Confine, when not nil, confines the runtime by the kernel instead:
	// it makes cmd (its Env the whole environment) start confined to
	// reading read, writing write and reaching only a listener on its own
	// 127.0.0.1:relayPort, which the relay serves once the Confinement has
	// started. The daemon's is broker.ConfineScript.
	Confine func(cmd *exec.Cmd, read, write []string, relayPort uint16) (Confinement, error)
}

// Error is a script that did not run to an exit code of its own: Op is
// OpBundle, OpStart or OpWait.
type Error struct {
	Op  string
	Err error
}

// The steps of Script that an Error names.
const (
	OpBundle = "bundle" // esbuild refused the script (its message names the file and line)
	OpStart  = "start"  // the runtime did not start
	OpWait   = "wait"   // waiting for it failed other than by its exit
)

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Script bundles s with the generated client, runs it on its runtime to its
// end and returns its envelope: the exit code (128+n for a signal), and
// with s.Envelope its output and tool calls. An error before the runtime
// starts is the broker's or the cache's; an *Error is the script's bundle
// or runtime.
func (r *Run) Script(ctx context.Context, s Script) (scripts.Envelope, error) {
	start := time.Now()
	env := scripts.Envelope{Script: s.Path, Runtime: s.Runtime.Name, Session: r.caller.Session}
	if err := os.MkdirAll(s.Cache, 0o700); err != nil {
		return env, err
	}
	dir, err := os.MkdirTemp(s.Cache, "run-")
	if err != nil {
		return env, err
	}
	defer os.RemoveAll(dir)
	reportFile := filepath.Join(dir, "calls.jsonl")
	var cmd *exec.Cmd
	kernel := s.Sandbox != nil && s.Sandbox.Confine != nil
	if s.Sandbox != nil && (s.Interpreter != nil || !kernel && s.Runtime.Name != "deno" || r.relay == nil) {
		return env, &Error{Op: OpStart, Err: errors.New("a confined script runs on deno only (or by the kernel), through the run's relay: only deno's permissions or the kernel confine a script")}
	}
	if s.Interpreter != nil {
		env.Runtime = interpreterName(s.Interpreter)
		cmd = exec.Command(s.Interpreter[0], append(append(s.Interpreter[1:len(s.Interpreter):len(s.Interpreter)], s.Path), s.Argv...)...)
		cmd.Env = os.Environ()
	} else if cmd, err = r.bundle(ctx, s, dir); err != nil {
		return env, err
	}
	cmd.Dir = r.dir
	if len(s.Wrap) > 0 && !kernel {
		wrap(cmd, s.Wrap, s.Env)
	}
	cmd.Env = append(append(cmd.Env, s.Env...),
		"MCPX_SESSION_ID="+r.caller.Session,
		"MCPX_PARENT_SESSION_ID="+r.caller.ParentSession,
		"MCPX_LEASE="+r.caller.Lease,
		scripts.EnvReport+"="+reportFile,
	)
	switch {
	case kernel:
		cmd.Env = append(cmd.Env, "MCPX_URL="+confinedRelayURL, "MCPX_TOKEN="+r.relay.Token(), "HOME="+dir, "TMPDIR="+dir)
	case r.relay != nil:
		cmd.Env = append(cmd.Env, "MCPX_URL="+r.relay.URL(), "MCPX_TOKEN="+r.relay.Token())
	}
	if r.caller.Scope != "" {
		cmd.Env = append(cmd.Env, "MCPX_SCOPE="+r.caller.Scope) // --scope
	}
	stdout, stderr := &Capped{Max: s.MaxOutput}, &Capped{Max: s.MaxOutput}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
	if s.Envelope {
		cmd.Stdout, cmd.Stderr = stdout, stderr
	}
	started := s.Started
	var records *recordLines
	if s.Records != nil && cmd.Stderr != nil {
		records = &recordLines{w: cmd.Stderr, f: s.Records}
		cmd.Stderr = records
		started = func(pid int) {
			s.Records.Started(pid)
			if s.Started != nil {
				s.Started(pid)
			}
		}
	}
	var after func() error
	if kernel {
		c, err := r.confine(cmd, s.Sandbox, dir)
		if err != nil {
			return env, &Error{Op: OpStart, Err: fmt.Errorf("confining %s: %w", env.Runtime, err)}
		}
		defer c.Close()
		after = func() error { return r.serveConfined(ctx, c) }
	}
	env.ExitCode, err = wait(ctx, cmd, scriptInterrupt, started, after)
	if e := (*Error)(nil); errors.As(err, &e) && e.Op == OpStart {
		err = &Error{Op: OpStart, Err: fmt.Errorf("starting %s: %w", env.Runtime, e.Err)}
	}
	if records != nil {
		records.flush() //nolint:errcheck // the last line lost, as any write of stderr may be
	}
	if err != nil || !s.Envelope {
		return env, err
	}
	calls, err := scripts.ReadCalls(reportFile)
	if err != nil {
		calls = []scripts.Call{} // no call made, so no file
	}
	env.DurationMs, env.Stdout, env.Stderr, env.Calls = time.Since(start).Milliseconds(), stdout.String(), stderr.String(), calls
	if out := bytes.TrimSpace(stdout.Bytes()); len(out) > 0 && json.Valid(out) {
		env.Result = out
	}
	return env, nil
}

// interpreterName is the interpreter's name for the envelope: the
// command's base name, or for env the command it runs ("python3" of
// ["/usr/bin/env", "-S python3 -u"]).
func interpreterName(cmd []string) string {
	name := filepath.Base(cmd[0])
	if name == "env" && len(cmd) > 1 {
		for _, f := range strings.Fields(cmd[1]) {
			if !strings.HasPrefix(f, "-") {
				return filepath.Base(f)
			}
		}
	}
	return name
}

// bundle fetches the client, bundles s with it into dir and returns the
// command that runs it on s.Runtime, with the runtime's environment.
func (r *Run) bundle(ctx context.Context, s Script, dir string) (*exec.Cmd, error) {
	mod, err := clientModule(ctx, r.bc, r.caller, s.Cache)
	if err != nil {
		return nil, err
	}
	key, keep := bundleKey(s, mod, r.dir) // a snippet that imports nothing is bundled once (bundlecache.go)
	runnerPath := ""
	if keep {
		runnerPath = cachedBundle(s.Cache, key, dir, s.Minimal)
	}
	if s.Deps != nil {
		d := *s.Deps
		d.Runtime, d.Context = s.Runtime.Name, ctx
		s.Deps = &d
	}
	if runnerPath == "" {
		var source string
		preamble := 0
		if s.Snippet != "" {
			preamble = scripts.ExecPreamble
			if source, err = scripts.ExecModule(s.Snippet, mod, s.Minimal); err != nil {
				return nil, err
			}
		}
		runnerPath, err = scripts.Bundle(scripts.BundleOptions{Entry: s.Path, Source: source, SourceDir: r.dir, Preamble: preamble, Client: mod, Lib: s.Lib, Dir: dir, Export: s.Export, Args: s.Args,
			Prefix: s.Prefix, Suffix: s.Suffix, Minimal: s.Minimal, Deps: s.Deps})
		if err != nil {
			return nil, &Error{Op: OpBundle, Err: err}
		}
		if keep {
			keepBundle(s.Cache, key, dir)
		}
	}
	if s.Sandbox != nil && s.Sandbox.Confine != nil {
		cmd := exec.Command(s.Runtime.Path, s.Runtime.Args(runnerPath, s.Argv)...)
		cmd.Env = append(slices.Clone(s.Sandbox.Env), s.Runtime.Env()...)
		return cmd, nil
	}
	if s.Sandbox != nil {
		host := strings.TrimPrefix(r.relay.URL(), "http://")
		cmd := exec.Command(s.Runtime.Path, scripts.ConfinedDenoArgs(runnerPath, host, append([]string{dir}, s.Sandbox.Read...), []string{dir}, s.Argv)...)
		cmd.Env = append(slices.Clone(s.Sandbox.Env), s.Runtime.Env()...)
		return cmd, nil
	}
	cmd := exec.Command(s.Runtime.Path, s.Runtime.Args(runnerPath, s.Argv)...)
	cmd.Env = append(os.Environ(), s.Runtime.Env()...)
	return cmd, nil
}

// wrap makes cmd start through argv (Script.Wrap): argv[0], found on the
// PATH of env (the script's variables) else the caller's, runs argv[1:],
// then cmd's program and arguments.
func wrap(cmd *exec.Cmd, argv []string, env []string) {
	path := argv[0]
	dirs := os.Getenv("PATH")
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			dirs = p
		}
	}
	if !strings.Contains(path, "/") {
		for _, d := range filepath.SplitList(dirs) {
			if fi, err := os.Stat(filepath.Join(d, path)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				path = filepath.Join(d, path)
				break
			}
		}
	}
	cmd.Args = append(append(slices.Clone(argv), cmd.Path), cmd.Args[1:]...)
	cmd.Path, cmd.Err = path, nil
}
