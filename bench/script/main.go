// Command script compares the per-call cost of the three ways a program
// calls a tool through a running `mcpx serve`: a node script using the
// generated TypeScript client, `mcpx call` (one process per call), and the
// Go client (client; over the unix socket, and over loopback TCP as the
// node script calls), each making the same sequential calls of the
// demo server's echo, in interleaved rounds so that machine noise hits each
// alike.
//
//	go build -o /tmp/mcpx ./cmd/mcpx
//	go run ./bench/script -mcpx /tmp/mcpx -n 200 -rounds 3
//
// It needs node and the pinned typescript of testdata/npm (the client is
// transpiled once, as Node 20 does not strip types). Everything it starts
// is stopped before it exits.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

func main() {
	mcpx := flag.String("mcpx", "", "the mcpx binary (required)")
	n := flag.Int("n", 200, "sequential calls per measurement")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	flag.Parse()
	if err := run(*mcpx, *n, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "script bench:", err)
		os.Exit(1)
	}
}

const echoScript = `import { demo } from "./client.ts";
declare const process: { argv: string[] }; // no @types/node
const n = Number(process.argv[2]);
await demo.echo({ message: "hi" }); // warm: the record read, the connection
const t0 = performance.now();
for (let i = 0; i < n; i++) {
  const r = await demo.echo({ message: "hi" });
  if (r.isError) throw new Error("echo failed");
}
console.log((performance.now() - t0).toFixed(3));
`

func run(mcpx string, n, rounds int) error {
	if mcpx == "" {
		return errors.New("-mcpx is required")
	}
	repo, err := os.Getwd()
	if err != nil {
		return err
	}
	tsc := filepath.Join(repo, "testdata", "npm", "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		return fmt.Errorf("run it at the module root, with testdata/npm installed: %w", err)
	}
	dir, err := os.MkdirTemp("", "mcpx-script-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b := &bench{mcpx: mcpx, dir: dir, caller: client.Caller{Cwd: dir},
		env: append(os.Environ(), "XDG_RUNTIME_DIR="+filepath.Join(dir, "run"), "XDG_STATE_HOME="+filepath.Join(dir, "state"),
			"XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "MCPX_NO_AUTOSTART=1", "PWD="+dir)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	stop, err := b.startDaemon(ctx)
	if err != nil {
		return err
	}
	defer stop()
	if err := b.buildScript(ctx, tsc); err != nil {
		return err
	}
	results := map[string][]time.Duration{}
	for r := range rounds {
		if err := b.round(ctx, n, results); err != nil {
			return err
		}
		fmt.Printf("round %d done\n", r+1)
	}
	fmt.Printf("\n%d sequential demo.echo calls per round, %d rounds; per call (median round, all rounds):\n", n, rounds)
	for _, name := range []string{"go client", "go tcp", "node script", "mcpx call"} {
		fmt.Printf("  %-12s %9v  %v\n", name, median(results[name]).Round(time.Microsecond), round(results[name]))
	}
	fmt.Printf("  node process start + module load + first call (once per script): %v\n", median(results["node process"]).Round(time.Millisecond))
	g := float64(median(results["go client"]))
	fmt.Printf("ratios to the Go client: node script %.2fx, mcpx call %.1fx\n",
		float64(median(results["node script"]))/g, float64(median(results["mcpx call"]))/g)
	return nil
}

// bench is one run's daemon, clients and script.
type bench struct {
	mcpx, dir string
	env       []string
	caller    client.Caller
	c, ctcp   *client.Client // over the unix socket and loopback TCP
	js        string         // the transpiled script's directory
}

// startDaemon starts mcpx serve in b.dir and connects both clients;
// stop interrupts it and waits.
func (b *bench) startDaemon(ctx context.Context) (stop func(), err error) {
	dir := b.dir
	sock := filepath.Join(dir, "run", "mcpx", "mcpx.sock")
	daemon := exec.CommandContext(ctx, b.mcpx, "serve")
	daemon.Env = b.env
	daemon.Dir = dir
	if err := daemon.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		daemon.Process.Signal(os.Interrupt)
		daemon.Wait()
	}
	b.c = client.New(sock, client.Options{StateDir: filepath.Join(dir, "state", "mcpx")})
	for i := 0; ; i++ {
		if _, _, err := b.c.Healthz(ctx); err == nil {
			break
		} else if i == 100 {
			stop()
			return nil, fmt.Errorf("mcpx serve is not healthy after 10s: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The Go client over loopback TCP too, as the node script calls.
	var rec wire.DaemonRecord
	data, err := os.ReadFile(filepath.Join(dir, "state", "mcpx", wire.RecordFile))
	if err == nil && (json.Unmarshal(data, &rec) != nil || rec.URL == "") {
		err = fmt.Errorf("the daemon record has no URL: %s", data)
	}
	if err != nil {
		stop()
		return nil, err
	}
	b.ctcp = client.New(rec.URL, client.Options{Token: rec.Token})
	return stop, nil
}

// buildScript generates the client (timed) and transpiles it with the
// echo script once.
func (b *bench) buildScript(ctx context.Context, tsc string) error {
	dir, c, caller := b.dir, b.c, b.caller
	t0 := time.Now()
	src, err := c.TypeScriptClient(ctx, caller, nil)
	if err != nil {
		return err
	}
	fmt.Printf("GET /v1/clients/typescript (first, child start included): %v, %d bytes\n", time.Since(t0).Round(time.Millisecond), len(src))
	var gens []time.Duration
	for range 20 {
		t := time.Now()
		if _, err := c.TypeScriptClient(ctx, caller, nil); err != nil {
			return err
		}
		gens = append(gens, time.Since(t))
	}
	fmt.Printf("GET /v1/clients/typescript (warm, median of 20): %v\n", median(gens).Round(10*time.Microsecond))
	for name, data := range map[string]string{"client.ts": string(src), "echo.ts": echoScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	b.js = filepath.Join(dir, "js")
	out, err := exec.CommandContext(ctx, "node", tsc, "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler",
		"--rewriteRelativeImportExtensions", "--types", "", "--skipLibCheck", "--outDir", b.js,
		filepath.Join(dir, "client.ts"), filepath.Join(dir, "echo.ts")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tsc: %v: %s", err, out)
	}
	return os.WriteFile(filepath.Join(b.js, "package.json"), []byte(`{"type":"module"}`), 0o644)
}

// round times n calls each way and appends the per-call figures.
func (b *bench) round(ctx context.Context, n int, results map[string][]time.Duration) error {
	args := json.RawMessage(`{"message":"hi"}`)
	// Go client, in process.
	t := time.Now()
	for range n {
		if _, err := b.c.CallTool(ctx, b.caller, "demo", "echo", args, nil); err != nil {
			return err
		}
	}
	results["go client"] = append(results["go client"], time.Since(t)/time.Duration(n))
	t = time.Now()
	for range n {
		if _, err := b.ctcp.CallTool(ctx, b.caller, "demo", "echo", args, nil); err != nil {
			return err
		}
	}
	results["go tcp"] = append(results["go tcp"], time.Since(t)/time.Duration(n))

	// node with the generated client: calls timed inside the script,
	// and the whole process (start, module load, first call) outside.
	t = time.Now()
	node := exec.CommandContext(ctx, "node", filepath.Join(b.js, "echo.js"), fmt.Sprint(n))
	node.Env, node.Dir = b.env, b.dir
	out, err := node.Output()
	if err != nil {
		return fmt.Errorf("node: %v: %s", err, out)
	}
	total := time.Since(t)
	var ms float64
	fmt.Sscan(strings.TrimSpace(string(out)), &ms)
	results["node script"] = append(results["node script"], time.Duration(ms*float64(time.Millisecond))/time.Duration(n))
	results["node process"] = append(results["node process"], total-time.Duration(ms*float64(time.Millisecond)))

	// mcpx call, one process per call.
	t = time.Now()
	for range n {
		call := exec.CommandContext(ctx, b.mcpx, "call", "demo.echo", string(args))
		call.Env, call.Dir = b.env, b.dir
		if out, err := call.CombinedOutput(); err != nil {
			return fmt.Errorf("mcpx call: %v: %s", err, out)
		}
	}
	results["mcpx call"] = append(results["mcpx call"], time.Since(t)/time.Duration(n))
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func round(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Microsecond)
	}
	return out
}
