package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/api/client"
	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/broker/chain"
	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/scripts"
)

// runInterruptGrace is how long a script has to end after the SIGINT an
// interrupted `mcpx run` passes on, before it is killed.
const runInterruptGrace = 5 * time.Second

// runLeaseTTL is the ttl of a run's lease: how long its pid-scoped instances
// outlive an `mcpx run` killed outright.
const runLeaseTTL = 30 * time.Second

// runCmd is `mcpx run <file|name> [args…]`: run a script on deno, bun or
// node with the generated client importable as "mcpx" (package scripts
// has the contract). The exit code is the script's.
func runCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "run")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	runtimeFlag := fs.String("runtime", "", "deno, bun or node, or a path to one's binary (default $MCPX_RUNTIME, else the first of deno, bun, node on PATH)")
	export := fs.String("export", "", "call this exported function instead of the default export")
	jsonArgs := fs.String("json-args", "", "a JSON value the function is called with (default: the positional arguments as an array of strings)")
	asJSON := fs.Bool("json", false, "print one JSON envelope: stdout, stderr, exit code, duration and the tool calls the script made")
	leaseTTL := fs.Duration("lease-ttl", runLeaseTTL, "the ttl of the run's own lease, renewed every ttl/3 while the script runs: how long its pid-scoped instances outlive a run killed outright")
	co := callerFlags(fs, "the directory the script runs in and declares")
	// Flags end at the script: what follows it is the script's.
	pos, code, ok := parseRunFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(c, fs, "want a script file or name (`mcpx scripts` lists the names)")
	}
	if *leaseTTL <= 0 {
		return usageError(c, fs, "--lease-ttl must be positive, e.g. 30s")
	}
	var argsJSON json.RawMessage
	if *jsonArgs != "" {
		if !json.Valid([]byte(*jsonArgs)) {
			return usageError(c, fs, "--json-args is not valid JSON: %q", *jsonArgs)
		}
		argsJSON = json.RawMessage(*jsonArgs)
	}
	ccfg, file, err := clientConfig(c)
	if err != nil && file != "" { // no home directory: no client config, which is fine
		return usageError(c, fs, "%v", err)
	}
	rt, err := scripts.ChooseRuntime(*runtimeFlag, c.getenv(scripts.EnvRuntime), ccfg.Runtime, exec.LookPath)
	if err != nil {
		return usageError(c, fs, "%v", err)
	}
	cwd, err := callerCwd(co.cwd, c.getenv)
	if err != nil {
		return usageError(c, fs, "%v", err)
	}
	script, err := resolveScript(c, cwd, pos[0])
	if err != nil {
		return usageError(c, fs, "%v", err)
	}

	// The run's own session, with the caller's as its parent; --session
	// runs it in a session of the caller's choosing instead.
	minted := co.session == ""
	session := co.session
	if minted {
		session = newSessionID()
	}
	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	dir := caller.Cwd // where the script runs, on this machine
	var relay *client.Relay
	if bc.Remote() {
		// The script runs here, in this machine's directory (--cwd names
		// the broker's), and reaches the broker through the CLI's relay.
		if dir, err = callerCwd("", c.getenv); err != nil {
			return report(c, err)
		}
		if relay, err = bc.StartRelay(client.RelayOptions{Local: dir, Remote: caller.Cwd, Mappings: ccfg.PathMappings, Config: file}); err != nil {
			return report(c, err)
		}
		defer relay.Close()
	}
	caller.Session, caller.ParentSession = session, c.getenv("MCPX_SESSION_ID")
	// The run's own lease, renewed while the script runs, unless the
	// caller runs it under one of its own (--lease, or $MCPX_LEASE from
	// `mcpx lease run`): then pid-scoped instances live as long as that.
	var own *wire.Lease
	ttl := *leaseTTL
	if caller.Lease == "" {
		if own, err = bc.AcquireLease(ctx, ttl); err != nil {
			return report(c, err)
		}
		caller.Lease = own.ID
		if d, err := time.ParseDuration(own.TTL); err == nil && d > 0 {
			ttl = d // as the broker granted it
		}
	}
	done, renewed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(renewed)
		if own != nil {
			renewLoop(ctx, c, bc, own.ID, ttl, done)
		}
	}()
	r := &scriptRun{c: c, bc: bc, caller: caller, rt: rt, script: script, dir: dir, relay: relay}
	code = r.run(ctx, scripts.BundleOptions{Entry: script, Export: *export, Args: argsJSON}, pos[1:], *asJSON)
	close(done)
	<-renewed

	// Release the lease and stop the run's session with a context of their
	// own: ctx may be the interrupt that ended the script.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if own != nil {
		if err := bc.ReleaseLease(rctx, own.ID); err != nil {
			fmt.Fprintf(c.stderr, "mcpx run: releasing lease %s: %v (it expires within %s)\n", own.ID, err, ttl)
		}
	}
	if minted {
		if err := bc.StopSession(rctx, "session:"+session); err != nil && !isNotFound(err) {
			fmt.Fprintf(c.stderr, "mcpx run: stopping session %s: %v\n", session, err)
		}
	}
	return code
}

// parseRunFlags parses mcpx run's flags up to the first positional
// argument: everything from the script on is the script's, flags included.
func parseRunFlags(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK, false
		}
		return nil, exitUsage, false
	}
	return fs.Args(), 0, true
}

// resolveScript returns the script arg names: a file (a path with a slash,
// or an existing file with a script extension), else a named script on the
// chain of cwd.
func resolveScript(c *cli, cwd, arg string) (string, error) {
	isFile := strings.Contains(arg, "/")
	if !isFile {
		for _, ext := range scripts.Extensions {
			if strings.HasSuffix(arg, ext) {
				isFile = true
			}
		}
	}
	if isFile {
		p := arg
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			return "", fmt.Errorf("no script file %s", arg)
		}
		return p, nil
	}
	dirs := chainDirs(c, cwd)
	if s, ok := scripts.Lookup(dirs, arg); ok {
		return s.Path, nil
	}
	var names []string
	for _, s := range scripts.Find(dirs) {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return "", fmt.Errorf("no script named %q: no scripts/ directory on the config chain (.config/mcpx or .mcpx from here up, then the user's config directory)", arg)
	}
	return "", fmt.Errorf("no script named %q; the scripts here: %s", arg, strings.Join(names, ", "))
}

// chainDirs is the config chain of cwd (canonicalised) for scripts: the
// directories package chain finds, with the daemon's rules read from the
// same variables (MCPX_OVERRIDE_PATHS, MCPX_FALLBACK_PATHS,
// MCPX_CEILING_DIRS; the user's and the system's config directories). An
// override or fallback that is a file holds no scripts.
func chainDirs(c *cli, cwd string) []string {
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	system := chain.DefaultSystemDir
	opts, err := chainFlagValues{override: new(string), fallback: new(string), system: &system}.options(c.getenv)
	if err != nil {
		opts.UserDir = "" // no user config directory: the chain has none
	}
	ch, warnings := chain.Find(cwd, opts)
	for _, w := range warnings {
		fmt.Fprintf(c.stderr, "mcpx: config chain: %s\n", w)
	}
	var dirs []string
	for _, d := range ch {
		if d.Scripts != "" || d.Lib != "" {
			dirs = append(dirs, d.Path)
		}
	}
	return dirs
}

// scriptRun is one mcpx run.
type scriptRun struct {
	c      *cli
	bc     *client.Client
	caller client.Caller
	rt     scripts.Runtime
	script string
	dir    string        // the script's working directory, on this machine
	relay  *client.Relay // the way to a remote broker; nil for a local one
}

// run bundles the script, runs it and returns its exit code; with asJSON
// it prints the envelope instead of passing stdout and stderr through.
func (r *scriptRun) run(ctx context.Context, bo scripts.BundleOptions, args []string, asJSON bool) int {
	c := r.c
	start := time.Now()
	state, err := stateDir(c.getenv)
	if err != nil {
		return report(c, err)
	}
	cache := filepath.Join(state, "run")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return report(c, err)
	}
	if bo.Client, err = r.client(ctx, cache); err != nil {
		return report(c, err)
	}
	dir, err := os.MkdirTemp(cache, "run-")
	if err != nil {
		return report(c, err)
	}
	defer os.RemoveAll(dir)
	bo.Dir, bo.Lib = dir, scripts.LibDirs(chainDirs(c, r.dir))
	runner, err := scripts.Bundle(bo)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx run: %v\n", err)
		return exitToolError
	}
	reportFile := filepath.Join(dir, "calls.jsonl")

	cmd := exec.Command(r.rt.Path, r.rt.Args(runner, args)...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), r.rt.Env()...)
	cmd.Env = append(cmd.Env,
		"MCPX_SESSION_ID="+r.caller.Session,
		"MCPX_PARENT_SESSION_ID="+r.caller.ParentSession,
		"MCPX_LEASE="+r.caller.Lease,
		scripts.EnvReport+"="+reportFile,
	)
	if r.relay != nil {
		cmd.Env = append(cmd.Env, "MCPX_URL="+r.relay.URL(), "MCPX_TOKEN="+r.relay.Token())
	}
	if r.caller.Scope != "" {
		cmd.Env = append(cmd.Env, "MCPX_SCOPE="+r.caller.Scope) // --scope
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, c.stderr
	if asJSON {
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
	}
	code := r.wait(ctx, cmd)
	if !asJSON {
		return code
	}
	calls, err := scripts.ReadCalls(reportFile)
	if err != nil {
		calls = []scripts.Call{} // no call made, so no file
	}
	env := scripts.Envelope{
		Script: r.script, Runtime: r.rt.Name, Session: r.caller.Session, ExitCode: code,
		DurationMs: time.Since(start).Milliseconds(), Stdout: stdout.String(), Stderr: stderr.String(), Calls: calls,
	}
	if out := bytes.TrimSpace(stdout.Bytes()); len(out) > 0 && json.Valid(out) {
		env.Result = out
	}
	b, _ := json.MarshalIndent(env, "", "  ")
	fmt.Fprintf(c.stdout, "%s\n", b)
	return code
}

// wait runs cmd to its end and returns its exit code (128+n for a signal).
// An interrupt (ctx ends) is passed on as SIGINT: the script ends, its
// connections close, and the broker cancels its in-flight calls; one that
// has not ended after runInterruptGrace is killed.
func (r *scriptRun) wait(ctx context.Context, cmd *exec.Cmd) int {
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(r.c.stderr, "mcpx run: starting %s: %v\n", r.rt.Name, err)
		return 127
	}
	stopFwd := context.AfterFunc(ctx, func() {
		cmd.Process.Signal(syscall.SIGINT)
		time.AfterFunc(runInterruptGrace, func() { cmd.Process.Kill() })
	})
	defer stopFwd()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	fmt.Fprintf(r.c.stderr, "mcpx run: %v\n", err)
	return exitFailed
}

// client returns the generated client of the run's servers, kept in the
// cache as client-<ETag>.ts (the route's ETag is a hash of the module,
// which names each server's tool-list fingerprint): the request names the
// modules kept (If-None-Match), so an unchanged one is answered 304 with no
// body — what matters against a remote broker, where the module crosses
// the tailnet — and a changed one is written once. The cache keeps the
// keepClients most recently used modules.
func (r *scriptRun) client(ctx context.Context, cache string) (string, error) {
	kept := keptClients(cache)
	var known []string
	for _, k := range kept {
		known = append(known, `"`+k.tag+`"`)
	}
	src, etag, err := r.bc.TypeScriptClientIfNew(ctx, r.caller, nil, known)
	if err != nil {
		return "", fmt.Errorf("fetching the generated client: %w", err)
	}
	tag := strings.Trim(strings.TrimPrefix(etag, "W/"), `"`)
	if src == nil { // 304: one of ours
		for _, k := range kept {
			if k.tag == tag {
				now := time.Now()
				os.Chtimes(k.path, now, now) //nolint:errcheck // only the pruning order
				return k.path, nil
			}
		}
		return "", fmt.Errorf("fetching the generated client: the broker answered 304 for %s, which is not in %s", etag, cache)
	}
	if !validTag(tag) { // an older broker: no ETag
		sum := sha256.Sum256(src)
		tag = hex.EncodeToString(sum[:16])
	}
	path := filepath.Join(cache, "client-"+tag+".ts")
	if err := atomicfile.Write(path, src, 0o600); err != nil {
		return "", err
	}
	for _, k := range kept[min(len(kept), keepClients-1):] {
		if k.path != path {
			os.Remove(k.path)
		}
	}
	return path, nil
}

// keepClients is how many generated client modules the run cache keeps.
const keepClients = 8

type keptClient struct{ tag, path string }

// keptClients lists the cache's client-<tag>.ts files, most recently used
// first.
func keptClients(cache string) []keptClient {
	ents, _ := os.ReadDir(cache)
	type withTime struct {
		keptClient
		mod time.Time
	}
	var list []withTime
	for _, e := range ents {
		tag, isClient := strings.CutPrefix(e.Name(), "client-")
		tag, isTS := strings.CutSuffix(tag, ".ts")
		if !isClient || !isTS || !validTag(tag) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			list = append(list, withTime{keptClient{tag, filepath.Join(cache, e.Name())}, fi.ModTime()})
		}
	}
	slices.SortFunc(list, func(a, b withTime) int { return b.mod.Compare(a.mod) })
	out := make([]keptClient, len(list))
	for i, w := range list {
		out[i] = w.keptClient
	}
	return out
}

// validTag reports whether tag is a module's ETag as the broker makes it:
// 32 lower-case hex digits (it names a file, so nothing else is taken).
func validTag(tag string) bool {
	if len(tag) != 32 {
		return false
	}
	for _, c := range tag {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// newSessionID returns a new run's session id: "run-" and 128 random bits.
func newSessionID() string {
	return "run-" + rand.Text()
}

// isNotFound reports whether err is the broker's 404: a session with no
// instance left has no record to stop.
func isNotFound(err error) bool {
	var p *wire.Problem
	return errors.As(err, &p) && p.Status == http.StatusNotFound
}

// scriptsCmd is `mcpx scripts [--json]`: the named scripts of the config
// chain, nearest first, with what each shadows.
func scriptsCmd(_ context.Context, c *cli, args []string) int {
	fs := newFlags(c, "scripts")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	cwdFlag := fs.String("cwd", "", "list the scripts seen from this directory (default $PWD)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "want no arguments")
	}
	cwd, err := callerCwd(*cwdFlag, c.getenv)
	if err != nil {
		return usageError(c, fs, "%v", err)
	}
	list := scripts.Find(chainDirs(c, cwd))
	if *asJSON {
		b, _ := json.MarshalIndent(struct {
			Scripts []scripts.Script `json:"scripts"`
		}{list}, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "no scripts (scripts/ beside .config/mcpx or .mcpx from here up, or the user's config directory)")
		return exitOK
	}
	printScripts(c.stdout, list)
	return exitOK
}

func printScripts(w io.Writer, list []scripts.Script) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPATH\tSHADOWS")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Path, orDash(strings.Join(s.Shadows, ", ")))
	}
	tw.Flush()
}
