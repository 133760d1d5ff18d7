//go:build linux

// Command tailnet measures mcpx over its embedded tailnet node against the
// unix socket, in one run, on a test tailnet on loopback (package
// internal/testing/testtailnet: no internet, no tailscaled):
//
//	go run ./bench/tailnet -mcpx /tmp/mcpx -rounds 5 -duration 2s -c 8
//
// It reports: a warm demo echo call over the tailnet (a client node in this
// process, HTTP on :80 over WireGuard) and over the unix socket, as p50 and
// calls/s at concurrency -c, in interleaved rounds; the daemon's idle RSS
// with and without --tailnet; and the time from starting `mcpx serve
// --tailnet` to its first answered call over the tailnet. It is apart from
// bench/load so that the load tool builds without tsnet. Linux only (the
// daemons it starts die with it by their parent-death signal).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"tailscale.com/net/netns"

	"mcpx.dev/mcpx/internal/testing/testtailnet"
	"mcpx.dev/mcpx/tsnet"
)

func main() {
	// tailscale reads its knobs at init: re-exec with the hermetic ones.
	if os.Getenv("TS_NO_LOGS_NO_SUPPORT") == "" {
		self, err := os.Executable()
		if err == nil {
			err = syscall.Exec(self, os.Args, append(os.Environ(), testtailnet.Env...))
		}
		fmt.Fprintln(os.Stderr, "tailnet bench: re-exec:", err)
		os.Exit(1)
	}
	mcpx := flag.String("mcpx", "", "the mcpx binary (required: go build -o /tmp/mcpx ./cmd/mcpx)")
	rounds := flag.Int("rounds", 5, "interleaved rounds")
	dur := flag.Duration("duration", 2*time.Second, "measured time per path per round")
	conc := flag.Int("c", 8, "callers in flight")
	idle := flag.Duration("idle", 3*time.Second, "how long a daemon idles before its RSS is read")
	flag.Parse()
	if *mcpx == "" || *rounds < 1 || *conc < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*mcpx, *rounds, *dur, *conc, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "tailnet bench:", err)
		os.Exit(1)
	}
}

func run(mcpx string, rounds int, dur time.Duration, conc int, idle time.Duration) error {
	netns.SetEnabled(false) // unprivileged nodes would stall on STUN
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "mcpxtn")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tn, err := testtailnet.Start(testtailnet.Options{})
	if err != nil {
		return err
	}
	defer tn.Close()
	g, _ := testtailnet.Grant(tsnet.DefaultCapability, `{"servers": ["*"], "roots": ["/"]}`)
	tn.Control.SetGlobalAppCaps(g)
	cfg := filepath.Join(tmp, "config.json")
	js, _ := json.Marshal(map[string]any{"servers": map[string]any{"demo": map[string]any{
		"command": mcpx, "args": []string{"demo-server"}, "scope": "global"}}})
	if err := os.WriteFile(cfg, js, 0o600); err != nil {
		return err
	}

	// Idle RSS without the tailnet node.
	plain, err := startServe(mcpx, cfg, filepath.Join(tmp, "plain"))
	if err != nil {
		return err
	}
	unixClient := client(func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", plain.sock)
	})
	if _, err := waitCall(ctx, unixClient, "http://mcpx"); err != nil {
		plain.stop()
		return err
	}
	time.Sleep(idle)
	rssPlain := rss(plain.cmd.Process.Pid)
	plain.stop()

	// The laptop: a client node in this process.
	laptop := &tsnet.Node{Hostname: "laptop", Dir: filepath.Join(tmp, "laptop"), ControlURL: tn.URL, Ephemeral: true}
	if _, err := laptop.Up(ctx); err != nil {
		return err
	}
	defer laptop.Close()
	tailClient := client(laptop.Dial)

	// Time to the first call answered over the tailnet, then idle RSS.
	began := time.Now()
	d, err := startServe(mcpx, cfg, filepath.Join(tmp, "tailnet"), "--tailnet", "--tailnet-hostname", "broker",
		"--tailnet-control-url", tn.URL, "--tailnet-ephemeral")
	if err != nil {
		return err
	}
	defer d.stop()
	servingAt := make(chan time.Duration, 1)
	go func() { // when the daemon logs that it serves (bounded by waitCall's 60s)
		for t0 := time.Now(); time.Since(t0) < 60*time.Second; time.Sleep(5 * time.Millisecond) {
			if d.logged("mcpx serving") {
				servingAt <- time.Since(began)
				return
			}
		}
		servingAt <- 0
	}()
	lastTry, err := waitCall(ctx, tailClient, "http://broker")
	if err != nil {
		return err
	}
	firstCall := time.Since(began)
	time.Sleep(idle)
	rssTailnet := rss(d.cmd.Process.Pid)

	unixClient = client(func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.sock)
	})
	paths := []struct {
		name string
		hc   *http.Client
		base string
	}{{"unix socket", unixClient, "http://mcpx"}, {"tailnet (HTTP :80, WireGuard)", tailClient, "http://broker"}}
	p50s := make([][]time.Duration, len(paths))
	rates := make([][]float64, len(paths))
	for _, p := range paths { // warm
		if _, _, err := load(ctx, p.hc, p.base, conc, 300*time.Millisecond); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	for range rounds {
		for i, p := range paths {
			p50, rate, err := load(ctx, p.hc, p.base, conc, dur)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			p50s[i] = append(p50s[i], p50)
			rates[i] = append(rates[i], rate)
		}
	}
	fmt.Printf("| path (demo echo, warm, c=%d) | p50 | calls/s |\n|---|---|---|\n", conc)
	for i, p := range paths {
		fmt.Printf("| %s | %v | %.0f |\n", p.name, medianD(p50s[i]).Round(time.Microsecond), medianF(rates[i]))
	}
	fmt.Printf("\ntailnet/unix: p50 x%.2f, calls/s x%.2f (medians of %d rounds of %v)\n",
		float64(medianD(p50s[1]))/float64(medianD(p50s[0])), medianF(rates[1])/medianF(rates[0]), rounds, dur)
	fmt.Printf("daemon idle RSS: %d MiB without --tailnet, %d MiB with (after %v idle, one demo child started)\n",
		rssPlain>>20, rssTailnet>>20, idle)
	fmt.Printf("mcpx serve --tailnet to its node up and serving: %v; to the first call answered over the tailnet: %v (that attempt took %v)\n",
		(<-servingAt).Round(time.Millisecond), firstCall.Round(time.Millisecond), lastTry.Round(time.Millisecond))
	return nil
}

type serve struct {
	cmd  *exec.Cmd
	sock string
	log  lockedWriter
}

func (s *serve) logged(msg string) bool {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return strings.Contains(s.log.buf.String(), msg)
}

func startServe(mcpx, cfg, dir string, extra ...string) (*serve, error) {
	s := &serve{sock: filepath.Join(dir, "s.sock")}
	args := append([]string{"serve", "--config", cfg, "--state-dir", filepath.Join(dir, "state"), "--socket", s.sock, "--listen", "off"}, extra...)
	s.cmd = exec.Command(mcpx, args...)
	s.cmd.Stderr = &s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return s, s.cmd.Start()
}

func (s *serve) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func client(dial func(context.Context, string, string) (net.Conn, error)) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 64}}
}

var echoArgs = []byte(`{"message":"hi"}`)

func call(ctx context.Context, hc *http.Client, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/servers/demo/tools/echo", bytes.NewReader(echoArgs))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcpx-Client", "bench") // the browser guard of network listeners
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"hi"`)) {
		return fmt.Errorf("%s: %.200s", resp.Status, body)
	}
	return nil
}

// waitCall retries the call until it is answered (bounded: 60s, every
// 10ms) and returns how long the answered attempt took.
func waitCall(ctx context.Context, hc *http.Client, base string) (time.Duration, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		t0 := time.Now()
		err := call(ctx, hc, base)
		if err == nil {
			return time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no call answered at %s within 60s: %w", base, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// load runs conc callers for dur and returns the median latency and the
// rate.
func load(ctx context.Context, hc *http.Client, base string, conc int, dur time.Duration) (time.Duration, float64, error) {
	var (
		mu   sync.Mutex
		lats []time.Duration
		n    atomic.Int64
		errs = make(chan error, conc)
		wg   sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(dur)
	for range conc {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(end) {
				t0 := time.Now()
				if err := call(ctx, hc, base); err != nil {
					errs <- err
					return
				}
				mine = append(mine, time.Since(t0))
				n.Add(1)
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errs:
		return 0, 0, err
	default:
	}
	if len(lats) == 0 {
		return 0, 0, errors.New("no call completed")
	}
	return medianD(lats), float64(n.Load()) / elapsed.Seconds(), nil
}

func medianD(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianF(f []float64) float64 {
	s := slices.Clone(f)
	slices.Sort(s)
	return s[len(s)/2]
}

// rss is the resident set of pid in bytes (Linux), 0 if unknown.
func rss(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
