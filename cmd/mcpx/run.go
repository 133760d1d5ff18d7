package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/config/chain"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/observe/tracing"
	"mcpx.dev/mcpx/scripts"
	"mcpx.dev/mcpx/scripts/runner"
)

// runCmd is `mcpx run <file|name> [args…] [-- args…]`: run a script on
// deno, bun or node with the generated client importable as "mcpx"
// (package scripts has the contract). run's flags are taken before and
// after the script up to `--` (parseScriptFlags). The exit code is the
// script's.
func runCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "run")
	sf := scriptFlagSet(fs)
	pos, after, code, ok := parseScriptFlags(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 && len(after) > 0 { // mcpx run [flags] -- <script> [args…]
		pos, after = after[:1], after[1:]
	}
	if len(pos) == 0 {
		return usageError(c, fs, "want a script file or name (`mcpx scripts` lists the names)")
	}
	return sf.run(ctx, c, fs, scriptSource{arg: pos[0]}, append(pos[1:], after...))
}

// scriptFlags are the flags of the commands that run a script: `mcpx run`
// and `mcpx exec`.
type scriptFlags struct {
	broker      *brokerOpts
	noAutostart *bool
	runtime     *string
	export      *string
	jsonArgs    *string
	asJSON      *bool
	leaseTTL    *time.Duration
	co          *callerOpts
	prefix      linesFlag
	suffix      linesFlag
	env         envFlag
	minimal     *bool
	format      *string // --format of the script's log records
	trace       *bool   // --trace: the script's calls in one trace (TRACEPARENT)
	chain       chainFlagValues
}

func scriptFlagSet(fs *flag.FlagSet) *scriptFlags {
	sf := &scriptFlags{
		broker:      brokerFlag(fs),
		noAutostart: autostartFlag(fs),
		runtime:     fs.String("runtime", "", "deno, bun or node, a path to one's binary, or a nix: spec (default $MCPX_RUNTIME or $MCPX_SCRIPT_RUNTIME, else script.runtime, else the first of deno, bun, node on PATH)"),
		export:      fs.String("export", "", "call this exported function instead of the default export"),
		jsonArgs:    fs.String("json-args", "", "a JSON value the function is called with (default: the positional arguments as an array of strings)"),
		asJSON:      fs.Bool("json", false, "print one JSON envelope: stdout, stderr, exit code, duration and the tool calls the script made"),
		leaseTTL:    fs.Duration("lease-ttl", runner.DefaultLeaseTTL, "the ttl of the run's own lease, renewed every ttl/3 while the script runs: how long its pid-scoped instances outlive a run killed outright"),
		co:          callerFlags(fs, "the directory the script runs in and declares"),
		format:      fs.String("format", formatJSON, "how the script's log records on stderr are printed: json (as written), text, compact or bare"),
		minimal:     fs.Bool("minimal", false, "run the script's module alone, with no harness: no function called, no prefix or suffix lines, no tool calls in --json"),
	}
	sf.trace = traceFlag(fs)
	sf.chain = addChainPathFlags(fs)
	sf.broker.chain = &sf.chain
	standaloneFlag(fs, sf.broker)
	fs.Var(&sf.prefix, "prefix", "a line to run before the script (repeatable; - = the config chain's script.prefix lines there; without -, they are replaced)")
	fs.Var(&sf.env, "env", "KEY=VALUE in the script's environment (repeatable; over the config chain's script.env)")
	fs.Var(&sf.suffix, "suffix", "a line to run after the script, in a finally that sees result {ok, value, error, ms} (repeatable; - as for --prefix)")
	return sf
}

// scriptSource is what runs: a script file or name (arg), or a snippet.
type scriptSource struct {
	arg     string
	snippet string
}

// run runs the script src with its positional arguments argv, under the
// flags sf, and returns its exit code.
func (sf *scriptFlags) run(ctx context.Context, c *cli, fs *flag.FlagSet, src scriptSource, argv []string) int {
	if *sf.leaseTTL <= 0 {
		return usageError(c, fs, "--lease-ttl must be positive, e.g. 30s")
	}
	if msg := checkFormat(*sf.format); msg != "" {
		return usageError(c, fs, "%s", msg)
	}
	stderr := c.stderr
	run := &runner.Fields{Version: version()}
	if !*sf.asJSON {
		rw := &recordWriter{w: c.stderr, format: *sf.format, run: run}
		defer rw.Close()
		stderr = rw
	}
	var argsJSON json.RawMessage
	if *sf.jsonArgs != "" {
		if !json.Valid([]byte(*sf.jsonArgs)) {
			return usageError(c, fs, "--json-args is not valid JSON: %q", *sf.jsonArgs)
		}
		argsJSON = json.RawMessage(*sf.jsonArgs)
	}
	ccfg, file, err := clientConfig(c)
	if err != nil && file != "" { // no home directory: no client config, which is fine
		return usageError(c, fs, "%v", err)
	}
	cwd, err := callerCwd(sf.co.cwd, c.getenv)
	if err != nil {
		return usageError(c, fs, "%v", err)
	}
	state, stateErr := stateDir(c.getenv)
	plan, err := runner.NewPlan(runner.PlanOptions{Script: src.arg, Snippet: src.snippet, Cwd: cwd, Chain: chainOf(c, sf.chain, cwd),
		Prefix: sf.prefix.lines, Suffix: sf.suffix.lines, Env: sf.env.vars, Export: *sf.export, Args: argsJSON, Minimal: *sf.minimal,
		Runtime: *sf.runtime, ClientRuntime: ccfg.Runtime, Getenv: c.getenv, State: state, Log: c.stderr, Context: ctx,
		Note: func(msg string) { fmt.Fprintf(c.stderr, "mcpx: %s\n", msg) },
		Warn: func(file string, err error) {
			fmt.Fprintf(c.stderr, "mcpx: config chain: %s: its script block is not used: %v\n", file, err)
		}})
	if err != nil {
		return usageError(c, fs, "%v", err)
	}
	if stateErr != nil {
		return report(c, stateErr)
	}
	s := plan.Script
	if *sf.trace {
		// The generated client sends $TRACEPARENT with each call: the
		// script's calls are children of the command's span.
		var end func()
		ctx, end = startTrace(ctx, c, fs.Name())
		defer end()
		s.Env = append(s.Env, "TRACEPARENT="+tracing.Traceparent(ctx))
	}
	bc, caller, err := callerClient(ctx, c, sf.broker, *sf.noAutostart, sf.co)
	if err != nil {
		return report(c, err)
	}
	dir := caller.Cwd // where the script runs, on this machine
	if bc.Remote() {
		// The script runs here, in this machine's directory (--cwd names
		// the broker's), and reaches the broker through the run's relay.
		if dir, err = callerCwd("", c.getenv); err != nil {
			return report(c, err)
		}
	}
	devEnv, err := plan.Environment(ctx, dir)
	if err != nil {
		return report(c, err)
	}
	// The run's own session, with the caller's as its parent (--session
	// names another), and its own lease unless the caller runs it under
	// one (--lease, or $MCPX_LEASE from `mcpx lease run`).
	r, err := runner.Start(ctx, runner.Options{Client: bc, Caller: caller, Session: sf.co.session, ParentSession: c.getenv("MCPX_SESSION_ID"),
		Dir: dir, Mappings: ccfg.PathMappings, Config: file, LeaseTTL: *sf.leaseTTL, Relay: plan.Relay(usesDefaultRecord(c, bc)), OnRenewError: renewFailed(c)})
	if err != nil {
		return report(c, err)
	}
	run.Session, run.ParentSession, run.Cwd = r.Caller().Session, r.Caller().ParentSession, dir
	s.Started, s.Lib, s.Argv, s.Env, s.Envelope = run.Started, scripts.LibDirs(chainDirs(c, sf.chain, dir)), argv, append(devEnv, s.Env...), *sf.asJSON
	if nixresolve.HasShellHook(devEnv) {
		s.Wrap = nixresolve.ShellHookWrap
	}
	s.Stdin, s.Stdout, s.Stderr = c.stdin, c.stdout, stderr
	code := runScript(ctx, c, strings.TrimPrefix(fs.Name(), "mcpx "), r, s)
	// Release the lease and stop the run's session (with a context of
	// their own: ctx may be the interrupt that ended the script).
	if err := r.Close(ctx); err != nil {
		for _, e := range unjoin(err) {
			fmt.Fprintf(c.stderr, "mcpx %s: %v\n", strings.TrimPrefix(fs.Name(), "mcpx "), e)
		}
	}
	return code
}

// runScript runs the script of r and returns its exit code; with --json
// it prints the envelope instead of passing stdout and stderr through.
func runScript(ctx context.Context, c *cli, cmd string, r *runner.Run, s runner.Script) int {
	env, err := r.Script(ctx, s)
	var re *runner.Error
	switch {
	case errors.As(err, &re):
		fmt.Fprintf(c.stderr, "mcpx %s: %v\n", cmd, re)
		switch re.Op {
		case runner.OpBundle:
			return exitToolError
		case runner.OpStart:
			return 127 // as shells say a command did not run
		}
		return exitFailed
	case err != nil:
		return report(c, err)
	}
	if s.Envelope {
		b, _ := json.MarshalIndent(env, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
	}
	return env.ExitCode
}

// unjoin is the errors errors.Join joined into err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// renewFailed reports a failed renewal of a lease mcpx holds; the next
// tick tries again.
func renewFailed(c *cli) func(id string, err error) {
	return func(id string, err error) {
		fmt.Fprintf(c.stderr, "mcpx lease: renewing lease %s: %v\n", id, err)
	}
}

// chainDirs is the config chain of cwd (canonicalised) for scripts: the
// directories package chain finds, with the daemon's rules: v's
// --override-paths and --fallback-paths, else the same variables
// (MCPX_OVERRIDE_PATHS, MCPX_FALLBACK_PATHS), MCPX_CEILING_DIRS, the
// user's and the system's config directories. An override or fallback
// that is a script file is a named script of its own.
func chainDirs(c *cli, v chainFlagValues, cwd string) []string {
	return runner.ChainDirs(chainOf(c, v, cwd))
}

// chainOf is the config chain of cwd, as chainDirs finds it.
func chainOf(c *cli, v chainFlagValues, cwd string) chain.Chain {
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	opts, err := v.options(c.getenv)
	if err != nil {
		opts.UserDir = "" // no user config directory: the chain has none
	}
	ch, warnings := chain.Find(cwd, opts)
	for _, w := range warnings {
		fmt.Fprintf(c.stderr, "mcpx: config chain: %s\n", w)
	}
	return ch
}

// scriptsCmd is `mcpx scripts [--json]`: the named scripts of the config
// chain, nearest first, with what each shadows.
func scriptsCmd(_ context.Context, c *cli, args []string) int {
	fs := newFlags(c, "scripts")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	cwdFlag := fs.String("cwd", "", "list the scripts seen from this directory (default $PWD)")
	chainFlags := addChainPathFlags(fs)
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
	list := scripts.Find(chainDirs(c, chainFlags, cwd))
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
