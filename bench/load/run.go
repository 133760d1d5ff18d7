package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
	profPath string        // U, Uwt or Ur: the load -profile runs
	timeout  time.Duration // the whole run
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
	paths := fs.String("paths", strings.Join(allPaths, ","), "comma-separated paths to measure")
	fs.StringVar(&o.mcpx, "mcpx", "", "mcpx binary (default: build mcpx.dev/mcpx/cmd/mcpx into a temporary directory)")
	fs.StringVar(&o.jsonOut, "json", "", "write the raw results as JSON to this file")
	fs.StringVar(&o.profile, "profile", "", "after the rounds, CPU-profile an instrumented daemon (the broker and api packages in this binary) under Uwt load and write the profile here")
	fs.DurationVar(&o.profDur, "profile-duration", 10*time.Second, "load time for -profile (half at the highest -c, half at c=1)")
	fs.StringVar(&o.profPath, "profile-path", "Uwt", "the path -profile loads: U, Uwt or Ur")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.rounds < 1 || o.duration <= 0 || o.maxCalls < 1 {
		return nil, errors.New("-rounds, -duration and -max-calls must be positive")
	}
	if !slices.Contains([]string{"U", "Uwt", "Ur"}, o.profPath) {
		return nil, fmt.Errorf("-profile-path: want U, Uwt or Ur, not %q", o.profPath)
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
	if o.mcpx == "" {
		if o.mcpx, err = buildMcpx(ctx, tmp); err != nil {
			return nil, err
		}
		logf("built %s", o.mcpx)
	}
	if o.mcpx, err = filepath.Abs(o.mcpx); err != nil {
		return nil, err
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

	d, err := startDaemon(ctx, o.mcpx, cfg, tmp, logf)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	if err := measureMemory(ctx, d, res, logf); err != nil {
		return nil, err
	}

	ps, err := setupPaths(ctx, o, d, wt, self)
	defer ps.close()
	if err != nil {
		return nil, err
	}
	for _, p := range ps.list {
		if err := warmPath(ctx, p); err != nil {
			return nil, fmt.Errorf("warming %s: %w", p.name, err)
		}
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
		cold, err := measureCold(ctx, o.mcpx, d, tmp, r)
		if err != nil {
			return nil, fmt.Errorf("round %d, cold start: %w", r+1, err)
		}
		res.Cold = append(res.Cold, cold)
		logf("round %d/%d done (%s)", r+1, o.rounds, time.Since(start).Round(time.Second))
	}
	if err := afterLoadMemory(ctx, d, res); err != nil {
		return nil, err
	}
	res.summarize()
	if o.profile != "" {
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
