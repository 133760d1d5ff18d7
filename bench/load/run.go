package main

import (
	"context"
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
	"strconv"
	"strings"
	"time"
)

// options are the command line.
type options struct {
	rounds   int
	duration time.Duration // measured time per cell
	warm     time.Duration // unmeasured time before each cell
	maxCalls int           // per cell, on top of duration
	conc     []int
	paths    []string
	mcpx     string
	jsonOut  string
	profile  string        // write a CPU profile of an instrumented daemon here
	profDur  time.Duration // load time for -profile
	profPath string        // U, Uwt, Ur, M or Mr: the load -profile runs
	timeout  time.Duration // the whole run

	// The MCP paths (F, G, M, M1, X).
	mcpVersion string // the protocol version their client offers
	sessions   int    // idle sessions opened per MCP path to measure memory per session; 0 = none
	node, hub  string // node, and mcp-hub's cli.js (G); "" = testdata/npm's
	// X: any MCP endpoint.
	url    string
	sse    bool
	header map[string]string
	tool   string
	args   json.RawMessage
	want   string
	pid    int
}

// headerFlag collects repeated -header "Name: value" flags.
type headerFlag map[string]string

func (f headerFlag) String() string { return fmt.Sprint(map[string]string(f)) }

func (f headerFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want Name: value, not %q", s)
	}
	f[http.CanonicalHeaderKey(strings.TrimSpace(k))] = strings.TrimSpace(v)
	return nil
}

func parseOptions(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.IntVar(&o.rounds, "rounds", 5, "interleaved rounds; medians and ratios are over rounds")
	fs.DurationVar(&o.duration, "duration", 1500*time.Millisecond, "measured time per path and concurrency in each round")
	fs.DurationVar(&o.warm, "warm", 100*time.Millisecond, "unmeasured warm-up before each measurement")
	fs.IntVar(&o.maxCalls, "max-calls", 200_000, "at most this many calls per measurement, whatever -duration says")
	conc := fs.String("c", "1,32", "comma-separated concurrencies (callers in flight)")
	paths := fs.String("paths", strings.Join(defaultPaths, ","), "comma-separated paths to measure, of "+strings.Join(allPaths, ","))
	fs.StringVar(&o.mcpx, "mcpx", "", "mcpx binary (default: build mcpx.dev/mcpx/cmd/mcpx into a temporary directory)")
	fs.StringVar(&o.jsonOut, "json", "", "write the raw results as JSON to this file")
	fs.StringVar(&o.profile, "profile", "", "after the rounds, CPU-profile an instrumented daemon (the broker and api packages in this binary) under Uwt load and write the profile here")
	fs.DurationVar(&o.profDur, "profile-duration", 10*time.Second, "load time for -profile (half at the highest -c, half at c=1)")
	fs.StringVar(&o.profPath, "profile-path", "Uwt", "the path -profile loads: U, Uwt, Ur, M or Mr")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.StringVar(&o.mcpVersion, "mcp-version", "2025-11-25", "MCP paths: the protocol version the client offers (2026-07-28: server/discover first, stateless where the server is)")
	fs.IntVar(&o.sessions, "sessions", 200, "MCP paths: after the rounds, open this many idle sessions and report the server's RSS growth per session (0 = skip)")
	fs.StringVar(&o.node, "node", "node", "G: the node binary")
	fs.StringVar(&o.hub, "hub", "", "G: mcp-hub's dist/cli.js (default: testdata/npm's)")
	fs.StringVar(&o.url, "url", "", "X: the MCP endpoint to load")
	fs.BoolVar(&o.sse, "sse", false, "X: the endpoint speaks the legacy HTTP+SSE transport, not Streamable HTTP")
	o.header = map[string]string{}
	fs.Var(headerFlag(o.header), "header", "X: a request header, \"Name: value\" (repeatable), e.g. \"Authorization: Bearer T\"")
	fs.StringVar(&o.tool, "tool", "echo", "X: the tool to call (or the aggregated name ending in __TOOL)")
	toolArgs := fs.String("args", string(echoArgs), "X: the tool's arguments, JSON")
	fs.StringVar(&o.want, "want", "", "X: the result's first text must contain this (\"\" = any non-error result)")
	fs.IntVar(&o.pid, "pid", 0, "X: the server's pid, for its CPU and memory per session (0 = not measured)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.rounds < 1 || o.duration <= 0 || o.maxCalls < 1 {
		return nil, errors.New("-rounds, -duration and -max-calls must be positive")
	}
	if o.args = json.RawMessage(*toolArgs); !json.Valid(o.args) {
		return nil, fmt.Errorf("-args: %q is not JSON", *toolArgs)
	}
	if !slices.Contains([]string{"U", "Uwt", "Ur", "M", "Mr"}, o.profPath) {
		return nil, fmt.Errorf("-profile-path: want U, Uwt, Ur, M or Mr, not %q", o.profPath)
	}
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("-c: %q is not a concurrency between 1 and 1024", s)
		}
		o.conc = append(o.conc, n)
	}
	for _, p := range strings.Split(*paths, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(allPaths, p) {
			return nil, fmt.Errorf("-paths: unknown path %q (known: %s)", p, strings.Join(allPaths, ", "))
		}
		o.paths = append(o.paths, p)
	}
	if slices.Contains(o.paths, "X") && o.url == "" {
		return nil, errors.New("path X needs -url")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "load:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res, err := bench(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return 1
	}
	writeMarkdown(stdout, res)
	if o.jsonOut != "" {
		if err := writeJSON(o.jsonOut, res); err != nil {
			fmt.Fprintln(stderr, "load:", err)
			return 1
		}
	}
	return 0
}

// bench sets everything up, runs the rounds and tears everything down.
func bench(ctx context.Context, o *options, logw io.Writer) (*results, error) {
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "load: "+format+"\n", args...) }
	tmp, err := os.MkdirTemp("", "mcpxb")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if o.mcpx == "" && anyOf(o.paths, mcpxPaths) {
		if o.mcpx, err = buildMcpx(ctx, tmp); err != nil {
			return nil, err
		}
		logf("built %s", o.mcpx)
	}
	if o.mcpx != "" {
		if o.mcpx, err = filepath.Abs(o.mcpx); err != nil {
			return nil, err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	res := newResults(o)
	wt, err := newRepo(ctx, filepath.Join(tmp, "wt"))
	if err != nil {
		return nil, err
	}
	cfg, err := writeConfig(tmp, o.mcpx, self, o.rounds)
	if err != nil {
		return nil, err
	}

	var d *daemon
	if anyOf(o.paths, daemonPaths) {
		if d, err = startDaemon(ctx, o.mcpx, cfg, tmp, logf); err != nil {
			return nil, err
		}
		defer d.stop()
		if err := measureMemory(ctx, d, res, logf); err != nil {
			return nil, err
		}
	}

	ps, err := setupPaths(ctx, o, d, tmp, wt, self)
	defer ps.close()
	if err != nil {
		return nil, err
	}
	for _, p := range ps.list {
		if err := warmPath(ctx, p); err != nil {
			return nil, fmt.Errorf("warming %s: %w", p.name, err)
		}
	}

	// Before the rounds, on servers not yet full of the load's garbage
	// (node's heap shrinks as soon as new sessions allocate); the idle
	// sessions stay open through the rounds, as closing them can disturb
	// a server's other sessions (mcp-hub's close handler re-enters itself).
	if err := measureSessions(ctx, o, ps, res, logf); err != nil {
		return nil, err
	}
	start := time.Now()
	for r := range o.rounds {
		for _, p := range ps.list {
			for _, c := range o.conc {
				cl, err := measure(ctx, p, c, o)
				if err != nil {
					return nil, fmt.Errorf("round %d, %s c=%d: %w", r+1, p.name, c, err)
				}
				cl.Round = r + 1
				res.Cells = append(res.Cells, cl)
			}
		}
		if d != nil {
			cold, err := measureCold(ctx, o.mcpx, d, tmp, r)
			if err != nil {
				return nil, fmt.Errorf("round %d, cold start: %w", r+1, err)
			}
			res.Cold = append(res.Cold, cold)
		}
		logf("round %d/%d done (%s)", r+1, o.rounds, time.Since(start).Round(time.Second))
	}
	if d != nil {
		if err := afterLoadMemory(ctx, d, res); err != nil {
			return nil, err
		}
	}
	res.summarize()
	if o.profile != "" && d != nil {
		ps.close()
		d.stop()
		top, err := profileDaemon(ctx, o, cfg, tmp, wt, self, logf)
		if err != nil {
			return nil, fmt.Errorf("profile: %w", err)
		}
		res.ProfileTop = top
		res.Options.ProfilePath = o.profPath
	}
	res.Machine.LoadAvgEnd = loadAvg()
	return res, nil
}

// measureSessions measures, for each MCP path whose server process is
// known, the server's RSS growth per idle session; the sessions are closed
// with the paths.
func measureSessions(ctx context.Context, o *options, ps *pathSet, res *results, logf func(string, ...any)) error {
	if o.sessions <= 0 {
		return nil
	}
	for _, p := range ps.list {
		if p.mcp == nil || p.server == nil || p.server() <= 0 {
			continue
		}
		m, idle, err := measureSessionMemory(ctx, p.name, p.mcp, p.server(), o.sessions)
		if err != nil {
			return fmt.Errorf("%s, memory per session: %w", p.name, err)
		}
		ps.closers = append(ps.closers, idle.close)
		logf("%s: %d idle sessions, server RSS %d → %d KiB (%.1f KiB per session)", p.name, m.Sessions, m.BeforeKB, m.AfterKB, m.PerSessionKB)
		res.Sessions = append(res.Sessions, m)
	}
	return nil
}

func anyOf(paths, set []string) bool {
	return slices.ContainsFunc(paths, func(p string) bool { return slices.Contains(set, p) })
}

// buildMcpx builds the mcpx command into dir.
func buildMcpx(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "mcpx")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "mcpx.dev/mcpx/cmd/mcpx")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building mcpx (run from inside the mcpx module, or pass -mcpx): %w", err)
	}
	return out, nil
}

// newRepo makes a git repository at dir (git init, no commit needed: the
// resolver reads .git, not history) and returns its canonical path. Without
// git it returns a plain directory, which resolves to a degraded cwd: key.
func newRepo(ctx context.Context, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if git, err := exec.LookPath("git"); err == nil {
		cmd := exec.CommandContext(ctx, git, "init", "-q", dir)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git init %s: %v: %s", dir, err, out)
		}
	}
	return filepath.EvalSymlinks(dir)
}
