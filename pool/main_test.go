package pool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/proc"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// The pool's tests run real children: this test binary, re-executed as
// the demo server (demo.MaybeServe), or as a stand-in daemon. These are
// the helpers they share.

func TestMain(m *testing.M) {
	sandbox.MaybeExec() // in a confined child's helper: confine, exec, never return
	proc.MaybeWatch()
	maybeResChild()
	demo.MaybeServe()
	switch os.Getenv(envPoolDaemon) {
	case "1":
		poolDaemon()
	case "survive":
		survivingDaemon()
	case "upgrade":
		upgradingDaemon()
	}
	os.Exit(m.Run())
}

// envPoolDaemon makes this test binary a stand-in daemon: a pool with one
// warm child, whose pid it prints, and then it waits to be killed. The child
// is a shell that serves the demo and, once its stdin is gone, does not exit
// but becomes `sleep`: only a signal can end it.
const envPoolDaemon = "MCPX_TEST_POOL_DAEMON"

func poolDaemon() {
	p := pool.New(pool.Options{})
	p.SetServers([]pool.Server{{Name: "demo", Command: "/bin/sh", Args: []string{"-c", `"$0"; exec sleep 600`, os.Args[0]},
		Env: map[string]string{demo.EnvServer: "1", envPoolDaemon: ""}}})
	serveOneChild(p)
}

// serveOneChild starts p's demo instance, prints its child's pid and
// waits to be killed: the rest of a stand-in daemon.
func serveOneChild(p *pool.Pool) {
	ctx := context.Background()
	err := p.Do(ctx, pool.Target{Server: "demo", Key: "global"}, func(s *client.Session) error {
		_, err := s.CallTool(ctx, "pid", nil, nil)
		return err
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(p.Instances()[0].Pid)
	select {}
}

// demoServer is a definition of the demo server run as a re-exec'd test
// binary, marked so leak checks find it.
func demoServer(t *testing.T, name string, env ...string) pool.Server {
	t.Helper()
	e := map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		e[k] = v
	}
	return pool.Server{Name: name, Command: os.Args[0], Env: e}
}

// clock is a settable time source for reaping and backoff tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newPool returns a pool without a background reaper, closed at cleanup
// (before the leak check runs).
func newPool(t *testing.T, opts pool.Options, servers ...pool.Server) *pool.Pool {
	t.Helper()
	proctest.CheckNoLeaks(t)
	opts.ReapInterval = -1
	p := pool.New(opts)
	p.SetServers(servers)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	return p
}

// call calls tool and returns its first text content.
func call(ctx context.Context, p *pool.Pool, tg pool.Target, tool string, args any) (string, error) {
	var text string
	raw, _ := json.Marshal(args)
	if args == nil {
		raw = nil
	}
	err := p.Do(ctx, tg, func(s *client.Session) error {
		res, err := s.CallTool(ctx, tool, raw, nil)
		if err != nil {
			return err
		}
		text, err = firstText(res)
		return err
	})
	return text, err
}

func firstText(res json.RawMessage) (string, error) {
	var r struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", err
	}
	if len(r.Content) == 0 {
		return "", fmt.Errorf("no content in %s", res)
	}
	if r.IsError {
		return "", fmt.Errorf("tool error: %s", r.Content[0].Text)
	}
	return r.Content[0].Text, nil
}

func mustCall(t *testing.T, p *pool.Pool, tg pool.Target, tool string, args any) string {
	t.Helper()
	// Bounded, so that a regression fails rather than hangs the package.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := call(ctx, p, tg, tool, args)
	if err != nil {
		t.Fatalf("%s on %s: %v", tool, tg.Key, err)
	}
	return s
}

func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// startStandIn starts this test binary as a stand-in daemon with env
// added, and returns it and the pid of the child it reports.
func startStandIn(t *testing.T, env ...string) (*exec.Cmd, int) {
	t.Helper()
	d := exec.Command(os.Args[0], "-test.run=^$")
	d.Env = append(append(os.Environ(), env...), proctest.Env(t))
	out, err := d.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.Stderr = os.Stderr
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		d.Process.Kill()
		d.Wait()
		t.Fatalf("reading the child's pid from the daemon: %v", err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	if child <= 0 || !alive(child) {
		d.Process.Kill()
		d.Wait()
		t.Fatalf("daemon reported child pid %q", line)
	}
	return d, child
}

// waitGone waits (bounded) for pid to exit.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 200 {
		if !alive(pid) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Errorf("process %d still alive", pid)
}
