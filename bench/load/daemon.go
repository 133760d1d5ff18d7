package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// writeConfig writes the daemon's config: the demo server three times (one
// shared global instance, one per worktree, and one for cold starts) and the
// minimal echo child (this binary re-exec'd).
func writeConfig(dir, mcpx, self string, rounds int) (string, error) {
	demoServer := func(scope string) map[string]any {
		return map[string]any{"command": mcpx, "args": []string{"demo-server"}, "scope": scope}
	}
	cold := demoServer("worktree")
	cold["max"] = 2
	cfg := map[string]any{"servers": map[string]any{
		"demo":   demoServer("global"),
		"demowt": demoServer("worktree"),
		"cold":   cold,
		"raw":    map[string]any{"command": self, "env": map[string]string{envRawChild: "1"}, "scope": "global"},
	}}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "config.json")
	return path, os.WriteFile(path, data, 0o644)
}

// daemon is a running `mcpx serve`.
type daemon struct {
	mcpx string
	cmd  *exec.Cmd
	sock string
	addr string // loopback TCP host:port
	// token is the bearer token TCP requests carry, from the daemon record.
	token string
	// api is the Go client (client) on the unix socket, for everything
	// but the measured calls: health, instances, stopping, cold starts.
	api *client.Client
	// unix and tcp are plain keep-alive HTTP clients for the measured paths
	// (U, Uwt, Ur, T and the profile): see postCall for why they bypass api.
	unix, tcp *http.Client
	exited    chan struct{}
	stopOnce  sync.Once

	mu   sync.Mutex
	tail []string // guarded by mu; the last lines of its log
}

var listenRE = regexp.MustCompile(`msg="mcpx serving".* listen=(\S+)`)

// startDaemon starts `mcpx serve` on a socket in dir and a free loopback
// port, and waits until it answers /healthz.
func startDaemon(ctx context.Context, mcpx, config, dir string, logf func(string, ...any)) (*daemon, error) {
	return startServe(ctx, mcpx, exec.Command(mcpx, "serve", "--config", config, "--state-dir", filepath.Join(dir, "state"),
		"--socket", filepath.Join(dir, "s.sock"), "--listen", "127.0.0.1:0",
		// Every path's connections, each MCP session's GET stream and the
		// idle sessions of -sessions stay open together: past the default
		// 512 a new connection would wait for a slot, measuring the cap.
		"--listen-max-conns", "4096"), filepath.Join(dir, "s.sock"), true, logf)
}

func startServe(ctx context.Context, mcpx string, cmd *exec.Cmd, sock string, wantTCP bool, logf func(string, ...any)) (*daemon, error) {
	d := &daemon{mcpx: mcpx, cmd: cmd, sock: sock, exited: make(chan struct{})}
	cmd.Env = append(cmd.Env, os.Environ()...)
	cmd.SysProcAttr = childAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go d.readLog(stderr, addr)
	go func() {
		cmd.Wait()
		close(d.exited)
	}()
	d.api = client.New(sock, client.Options{})
	d.unix = newClient(unixDialer(sock))
	if wantTCP {
		select {
		case d.addr = <-addr:
		case <-d.exited:
			return nil, fmt.Errorf("mcpx serve exited: %s", d.logTail())
		case <-time.After(10 * time.Second):
			d.stop()
			return nil, fmt.Errorf("mcpx serve did not log its listen address within 10s: %s", d.logTail())
		}
		d.tcp = newClient(nil)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, err := d.api.Healthz(ctx); err == nil {
			break
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			d.stop()
			return nil, fmt.Errorf("mcpx serve is not healthy after 10s: %v; log: %s", err, d.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if wantTCP {
		if i := slices.Index(cmd.Args, "--state-dir"); i >= 0 && i+1 < len(cmd.Args) {
			if rec, err := client.ReadRecord(cmd.Args[i+1]); err == nil {
				d.token = rec.Token
			}
		}
	}
	logf("mcpx serve pid %d: socket %s, tcp %s", d.pid(), sock, d.addr)
	return d, nil
}

// readLog keeps the last lines of the daemon's log and reports the TCP
// address from the "mcpx serving" line.
func (d *daemon) readLog(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := listenRE.FindStringSubmatch(line); m != nil {
			select {
			case addr <- m[1]:
			default:
			}
		}
		d.mu.Lock()
		d.tail = append(d.tail, line)
		if len(d.tail) > 20 {
			d.tail = d.tail[1:]
		}
		d.mu.Unlock()
	}
}

func (d *daemon) logTail() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.tail, "\n")
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// stop sends SIGTERM (the daemon drains and stops its children) and waits,
// bounded; then SIGKILL.
func (d *daemon) stop() {
	d.stopOnce.Do(func() {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
			return
		case <-time.After(15 * time.Second):
		}
		d.cmd.Process.Kill()
		<-d.exited
	})
}

func (d *daemon) instances(ctx context.Context) ([]wire.Instance, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	list, _, err := d.api.Instances(ctx)
	if err != nil {
		return nil, err
	}
	return list.Instances, nil
}

// callEcho makes the echo call on server through the client, as cl.
func (d *daemon) callEcho(ctx context.Context, server string, cl client.Caller) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := d.api.CallTool(ctx, cl, server, "echo", echoArgs, nil)
	if err == nil && !bytes.Contains(res, echoWant) {
		err = fmt.Errorf("unexpected result %.200s", res)
	}
	return err
}

// childPid returns the pid of the (first) ready instance of server, 0 if none.
func (d *daemon) childPid(server string) int {
	list, err := d.instances(context.Background())
	if err != nil {
		return 0
	}
	for _, in := range list {
		if in.Server == server && in.State == "ready" {
			return in.Pid
		}
	}
	return 0
}

// rssKB is VmRSS of pid in KiB, from /proc/<pid>/status; 0 if unknown.
func rssKB(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
	}
	return 0
}

// procCPU is utime+stime of pid (clock ticks of 10ms); 0 if unknown.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// settle is how long the daemon is left alone before its RSS is read.
const settle = 500 * time.Millisecond

// measureMemory reads the daemon's RSS idle after start, then after one
// call has started the shared demo child.
func measureMemory(ctx context.Context, d *daemon, res *results, logf func(string, ...any)) error {
	time.Sleep(settle)
	res.Memory.IdleKB = rssKB(d.pid())
	if err := d.callEcho(ctx, "demo", client.Caller{Session: "bench"}); err != nil {
		return fmt.Errorf("first call through the daemon: %w; log: %s", err, d.logTail())
	}
	time.Sleep(settle)
	res.Memory.OneChildKB = rssKB(d.pid())
	res.Memory.ChildKB = rssKB(d.childPid("demo"))
	logf("daemon RSS idle %d KiB, with one warm child %d KiB (child %d KiB)", res.Memory.IdleKB, res.Memory.OneChildKB, res.Memory.ChildKB)
	return nil
}

func afterLoadMemory(ctx context.Context, d *daemon, res *results) error {
	res.Memory.AfterLoadKB = rssKB(d.pid())
	list, err := d.instances(ctx)
	if err != nil {
		return err
	}
	res.Memory.Instances = len(list)
	time.Sleep(2 * settle)
	res.Memory.AfterLoadIdleKB = rssKB(d.pid())
	return nil
}

// measureCold times one first call that has to start a child: directly
// (spawn `mcpx demo-server`, initialize, call) and through the daemon (a
// worktree nobody has used: resolve, spawn, initialize, call). The broker's
// cold instance is stopped afterwards so it does not accumulate.
func measureCold(ctx context.Context, mcpx string, d *daemon, dir string, round int) (coldResult, error) {
	var cr coldResult
	t0 := time.Now()
	s, c, err := startStdio(ctx, exec.Command(mcpx, "demo-server"))
	if err != nil {
		return cr, err
	}
	err = sessionCall(s)(ctx)
	cr.DirectMs = ms(time.Since(t0))
	s.Close()
	c.stop()
	if err != nil {
		return cr, err
	}

	repo, err := newRepo(ctx, filepath.Join(dir, "cold-"+strconv.Itoa(round)))
	if err != nil {
		return cr, err
	}
	t0 = time.Now()
	err = d.callEcho(ctx, "cold", client.Caller{Session: "bench", Cwd: repo})
	cr.BrokerMs = ms(time.Since(t0))
	if err != nil {
		return cr, err
	}
	list, err := d.instances(ctx)
	if err != nil {
		return cr, err
	}
	for _, in := range list {
		if in.Server == "cold" && in.Key == "worktree:"+repo {
			if err := d.api.StopInstance(ctx, in.ID); err != nil && !errors.Is(err, context.Canceled) {
				return cr, fmt.Errorf("stopping the cold instance: %w", err)
			}
		}
	}
	time.Sleep(100 * time.Millisecond) // let the stopped child go before the next measurement
	return cr, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
