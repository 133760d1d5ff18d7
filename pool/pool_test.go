package pool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/pool"
)

func TestInstancesPerKeyAnswerTheirOwnRoot(t *testing.T) {
	p := newPool(t, pool.Options{}, demoServer(t, "demo"))
	a, b := realDir(t), realDir(t)
	ta := pool.Target{Server: "demo", Key: "worktree:" + a, Root: a}
	tb := pool.Target{Server: "demo", Key: "worktree:" + b, Root: b}
	for _, tc := range []struct {
		tg   pool.Target
		root string
	}{{ta, a}, {tb, b}} {
		if got := mustCall(t, p, tc.tg, "cwd", nil); got != tc.root {
			t.Errorf("cwd for %s = %q, want %q", tc.tg.Key, got, tc.root)
		}
		var roots []struct{ URI, Name string }
		if err := json.Unmarshal([]byte(mustCall(t, p, tc.tg, "roots", nil)), &roots); err != nil {
			t.Fatal(err)
		}
		if len(roots) != 1 || roots[0].URI != "file://"+tc.root || roots[0].Name != filepath.Base(tc.root) {
			t.Errorf("roots for %s = %+v, want [{file://%s %s}]", tc.tg.Key, roots, tc.root, filepath.Base(tc.root))
		}
	}
	pa, pb := mustCall(t, p, ta, "pid", nil), mustCall(t, p, tb, "pid", nil)
	if pa == pb {
		t.Errorf("two keys share pid %s; want two instances", pa)
	}
	st := p.Instances()
	if len(st) != 2 {
		t.Fatalf("status has %d instances, want 2: %+v", len(st), st)
	}
	for _, s := range st {
		if s.CwdSource != pool.CwdScope || s.Root == "" || s.Cwd != s.Root || s.State != pool.StateReady || s.Pid == 0 {
			t.Errorf("status %+v: want cwdSource scope, cwd = root, ready, pid", s)
		}
	}
}

func TestGlobalInstanceIsRootless(t *testing.T) {
	p := newPool(t, pool.Options{}, demoServer(t, "demo"))
	g := pool.Target{Server: "demo", Key: "global"}
	if got := mustCall(t, p, g, "roots", nil); got != "[]" {
		t.Errorf("roots of a global instance = %s, want []", got)
	}
	var init struct {
		Line         string `json:"line"`
		Capabilities map[string]any
	}
	raw := mustCall(t, p, g, "init", nil)
	if err := json.Unmarshal([]byte(raw), &init); err != nil {
		t.Fatalf("init answer %s: %v", raw, err)
	}
	for _, field := range []string{"roots", "rootUri", "workspaceFolders", "workspace"} {
		if strings.Contains(raw, field) {
			t.Errorf("global initialize mentions %q: %s", field, raw)
		}
	}
	wd, _ := os.Getwd()
	if got := mustCall(t, p, g, "cwd", nil); got != wd {
		t.Errorf("global instance cwd = %q, want the daemon's %q", got, wd)
	}
	if st := p.Instances(); len(st) != 1 || st[0].CwdSource != pool.CwdDaemon {
		t.Errorf("status = %+v, want one instance with cwdSource daemon", st)
	}
}

func TestConfigCwdWinsAndIsSubstituted(t *testing.T) {
	root := realDir(t)
	sub := filepath.Join(root, "sub")
	os.Mkdir(sub, 0o755)
	s := demoServer(t, "demo")
	s.Cwd = "${mcpx.root}/sub"
	s.Env["WHERE"] = "${mcpx.root}"
	p := newPool(t, pool.Options{}, s)
	tg := pool.Target{Server: "demo", Key: "worktree:" + root, Root: root}
	if got := mustCall(t, p, tg, "cwd", nil); got != sub {
		t.Errorf("cwd = %q, want %q", got, sub)
	}
	if got := mustCall(t, p, tg, "env", map[string]string{"name": "WHERE"}); got != root {
		t.Errorf("env WHERE = %q, want %q", got, root)
	}
	if st := p.Instances(); st[0].CwdSource != pool.CwdConfig {
		t.Errorf("cwdSource = %s, want config", st[0].CwdSource)
	}
	// An empty root cannot fill ${mcpx.root}: the spawn fails naming the field.
	_, err := call(t.Context(), p, pool.Target{Server: "demo", Key: "global"}, "pid", nil)
	if !errors.Is(err, pool.ErrSpawnConfig) || !strings.Contains(err.Error(), "cwd") {
		t.Errorf("global call with ${mcpx.root} cwd: err = %v, want ErrSpawnConfig naming cwd", err)
	}
}

func TestLRUEvictionAtServerMax(t *testing.T) {
	s := demoServer(t, "demo")
	s.Max = 2
	clk := newClock()
	p := newPool(t, pool.Options{Now: clk.Now}, s)
	var pids []int
	for i := range 3 {
		tg := pool.Target{Server: "demo", Key: fmt.Sprintf("session:%d", i)}
		pid, _ := strconv.Atoi(mustCall(t, p, tg, "pid", nil))
		pids = append(pids, pid)
		clk.Add(time.Second)
	}
	// Touch session:1 so session:0 stays the least recently used... it was
	// already evicted by the third start; check that and the survivors.
	st := p.Instances()
	if len(st) != 2 || st[0].Key != "session:1" || st[1].Key != "session:2" {
		t.Fatalf("instances = %+v, want session:1 and session:2", st)
	}
	waitGone(t, pids[0])
	if !alive(pids[1]) || !alive(pids[2]) {
		t.Errorf("survivors died: %v", pids)
	}
	// Now use session:1, so session:2 is the LRU one when session:3 comes.
	clk.Add(time.Second)
	mustCall(t, p, pool.Target{Server: "demo", Key: "session:1"}, "pid", nil)
	clk.Add(time.Second)
	mustCall(t, p, pool.Target{Server: "demo", Key: "session:3"}, "pid", nil)
	st = p.Instances()
	if len(st) != 2 || st[0].Key != "session:1" || st[1].Key != "session:3" {
		t.Fatalf("instances = %+v, want session:1 and session:3", st)
	}
	waitGone(t, pids[2])
}

func TestDaemonCapAndExhaustion(t *testing.T) {
	a, b := demoServer(t, "a"), demoServer(t, "b")
	p := newPool(t, pool.Options{MaxInstances: 2, WaitTimeout: 100 * time.Millisecond}, a, b)
	ctx := t.Context()
	// Hold both slots busy, then ask for a third instance: it waits its
	// WaitTimeout in line, then is refused.
	var wg sync.WaitGroup
	started := make(chan struct{}, 2)
	for _, srv := range []string{"a", "b"} {
		wg.Go(func() {
			p.Do(ctx, pool.Target{Server: srv, Key: "global"}, func(s *client.Session) error {
				started <- struct{}{}
				_, err := s.CallTool(ctx, "sleep", json.RawMessage(`{"ms":1500}`), nil)
				return err
			})
		})
	}
	<-started
	<-started
	_, err := call(ctx, p, pool.Target{Server: "a", Key: "session:x"}, "pid", nil)
	var pe *pool.Error
	if !errors.Is(err, pool.ErrExhausted) || !errors.As(err, &pe) || pe.RetryAfter <= 0 || !strings.Contains(pe.Detail, "pool.waitTimeout") {
		t.Fatalf("third instance while two are busy: err = %v, want ErrExhausted with RetryAfter naming pool.waitTimeout", err)
	}
	if got := p.Stats().Exhausted; got != 1 {
		t.Errorf("Stats().Exhausted = %d, want 1", got)
	}
	wg.Wait()
	// Idle now: the LRU instance is evicted to make room.
	mustCall(t, p, pool.Target{Server: "a", Key: "session:x"}, "pid", nil)
	if n := len(p.Instances()); n != 2 {
		t.Errorf("%d instances, want the cap of 2", n)
	}
}

func TestIdleReap(t *testing.T) {
	s := demoServer(t, "demo")
	s.IdleTimeout = time.Minute
	clk := newClock()
	p := newPool(t, pool.Options{Now: clk.Now, IdleTimeout: time.Hour}, s)
	tg := pool.Target{Server: "demo", Key: "global"}
	pid, _ := strconv.Atoi(mustCall(t, p, tg, "pid", nil))
	clk.Add(59 * time.Second)
	p.Reap()
	if len(p.Instances()) != 1 || !alive(pid) {
		t.Fatal("instance reaped before its idle timeout")
	}
	clk.Add(2 * time.Second)
	p.Reap()
	if n := len(p.Instances()); n != 0 {
		t.Fatalf("%d instances after idle timeout, want 0", n)
	}
	waitGone(t, pid)
	// The next call starts a fresh child.
	if pid2, _ := strconv.Atoi(mustCall(t, p, tg, "pid", nil)); pid2 == pid {
		t.Error("reaped instance answered again")
	}
}

func TestCallerOwnedKeysStopWithTheirOwner(t *testing.T) {
	var ownerAlive atomic.Bool
	ownerAlive.Store(true)
	p := newPool(t, pool.Options{KeyAlive: func(key string) bool {
		return !strings.HasPrefix(key, "pid:") || ownerAlive.Load()
	}}, demoServer(t, "demo"))
	pid, _ := strconv.Atoi(mustCall(t, p, pool.Target{Server: "demo", Key: "pid:4242"}, "pid", nil))
	mustCall(t, p, pool.Target{Server: "demo", Key: "global"}, "pid", nil)
	p.Reap()
	if len(p.Instances()) != 2 {
		t.Fatal("reaped a live owner's instance")
	}
	ownerAlive.Store(false)
	p.Reap()
	if st := p.Instances(); len(st) != 1 || st[0].Key != "global" {
		t.Fatalf("instances = %+v, want only global", st)
	}
	waitGone(t, pid)
}

func TestEphemeralCallInstanceGoneAfterCall(t *testing.T) {
	p := newPool(t, pool.Options{}, demoServer(t, "demo"))
	pid, _ := strconv.Atoi(mustCall(t, p, pool.Target{Server: "demo", Key: "call:abc", Ephemeral: true}, "pid", nil))
	if n := len(p.Instances()); n != 0 {
		t.Errorf("%d instances after an ephemeral call, want 0", n)
	}
	waitGone(t, pid)
}

func TestExclusiveOneHolderAtATime(t *testing.T) {
	s := demoServer(t, "demo")
	s.Exclusive = true
	p := newPool(t, pool.Options{}, s)
	tg := pool.Target{Server: "demo", Key: "global"}
	mustCall(t, p, tg, "pid", nil) // started and idle
	holding := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- p.Do(t.Context(), tg, func(*client.Session) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	// A caller whose deadline passes while the holder holds gets a timeout.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	_, err := call(ctx, p, tg, "pid", nil)
	cancel()
	if !errors.Is(err, pool.ErrTimeout) || !strings.Contains(err.Error(), "exclusive") {
		t.Fatalf("second caller: err = %v, want ErrTimeout mentioning exclusive", err)
	}
	// A caller with time to spare gets the instance once it is released.
	got := make(chan error, 1)
	go func() { _, err := call(t.Context(), p, tg, "pid", nil); got <- err }()
	select {
	case err := <-got:
		t.Fatalf("waiter ran while the instance was held (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter after release: %v", err)
	}
}

func TestCrashGivesStderrTailThenRespawns(t *testing.T) {
	p := newPool(t, pool.Options{}, demoServer(t, "demo"))
	tg := pool.Target{Server: "demo", Key: "global"}
	pid1, _ := strconv.Atoi(mustCall(t, p, tg, "pid", nil))
	_, err := call(t.Context(), p, tg, "crash", map[string]any{"code": 7, "stderr": "disk on fire"})
	var pe *pool.Error
	if !errors.Is(err, pool.ErrCrashed) || !errors.As(err, &pe) {
		t.Fatalf("crash: err = %v, want ErrCrashed", err)
	}
	if !strings.Contains(pe.StderrTail, "disk on fire") || !strings.Contains(pe.Detail, "status 7") {
		t.Errorf("crash error: detail %q, tail %q; want exit status 7 and the stderr text", pe.Detail, pe.StderrTail)
	}
	waitGone(t, pid1)
	pid2, _ := strconv.Atoi(mustCall(t, p, tg, "pid", nil))
	if pid2 == pid1 {
		t.Error("no respawn after crash")
	}
	if st := p.Instances(); len(st) != 1 || st[0].Restarts != 1 || st[0].State != pool.StateReady {
		t.Errorf("status after respawn = %+v, want 1 restart, ready", st)
	}
}

func TestCrashLoopBackoff(t *testing.T) {
	clk := newClock()
	p := newPool(t, pool.Options{Now: clk.Now}, demoServer(t, "demo", demo.EnvExitAtStart+"=5"))
	tg := pool.Target{Server: "demo", Key: "global"}
	for i := range 3 {
		_, err := call(t.Context(), p, tg, "pid", nil)
		var pe *pool.Error
		if !errors.As(err, &pe) || !errors.Is(err, pool.ErrCrashed) || !strings.Contains(pe.StderrTail, "boom") {
			t.Fatalf("start %d: err = %v (tail %q), want ErrCrashed with stderr boom", i, err, tailOf(err))
		}
	}
	_, err := call(t.Context(), p, tg, "pid", nil)
	var pe *pool.Error
	if !errors.Is(err, pool.ErrBackoff) || !errors.As(err, &pe) || pe.RetryAfter <= 0 || !strings.Contains(pe.StderrTail, "boom") {
		t.Fatalf("after 3 failed starts: err = %v, want ErrBackoff with RetryAfter and stderr", err)
	}
	st := p.Instances()
	if len(st) != 1 || st[0].State != pool.StateBackoff || st[0].BackoffUntil.IsZero() || st[0].LastError == "" {
		t.Fatalf("status = %+v, want backoff with until and last error", st)
	}
	// Once the backoff has passed, the next call tries again (and fails again,
	// doubling the wait).
	clk.Add(pe.RetryAfter + time.Millisecond)
	if _, err := call(t.Context(), p, tg, "pid", nil); !errors.Is(err, pool.ErrCrashed) {
		t.Fatalf("after backoff: err = %v, want a new start that crashes", err)
	}
	_, err = call(t.Context(), p, tg, "pid", nil)
	var pe2 *pool.Error
	if !errors.As(err, &pe2) || !errors.Is(err, pool.ErrBackoff) || pe2.RetryAfter <= pe.RetryAfter {
		t.Errorf("second backoff: err = %v, want a longer RetryAfter than %v", err, pe.RetryAfter)
	}
}

func tailOf(err error) string {
	var pe *pool.Error
	if errors.As(err, &pe) {
		return pe.StderrTail
	}
	return ""
}

func TestStartTimeoutForAChildThatNeverAnswers(t *testing.T) {
	s := demoServer(t, "demo", demo.EnvHang+"=1")
	s.StartTimeout = 300 * time.Millisecond
	p := newPool(t, pool.Options{}, s)
	_, err := call(t.Context(), p, pool.Target{Server: "demo", Key: "global"}, "pid", nil)
	if !errors.Is(err, pool.ErrStartTimeout) || !strings.Contains(err.Error(), "initialize") {
		t.Fatalf("err = %v, want ErrStartTimeout mentioning initialize", err)
	}
}

func TestGarbageOnStdout(t *testing.T) {
	p := newPool(t, pool.Options{}, demoServer(t, "demo", demo.EnvGarbage+"=1"))
	_, err := call(t.Context(), p, pool.Target{Server: "demo", Key: "global"}, "pid", nil)
	if err == nil || !strings.Contains(err.Error(), "stdout") {
		t.Fatalf("err = %v, want an error explaining the child wrote non-JSON to stdout", err)
	}
}

func TestUnknownServer(t *testing.T) {
	p := newPool(t, pool.Options{})
	_, err := call(t.Context(), p, pool.Target{Server: "nope", Key: "global"}, "pid", nil)
	if !errors.Is(err, pool.ErrUnknownServer) {
		t.Fatalf("err = %v, want ErrUnknownServer", err)
	}
}

func TestBadCommand(t *testing.T) {
	p := newPool(t, pool.Options{}, pool.Server{Name: "ghost", Command: "/nonexistent/mcp-server"})
	_, err := call(t.Context(), p, pool.Target{Server: "ghost", Key: "global"}, "pid", nil)
	if !errors.Is(err, pool.ErrStart) || !strings.Contains(err.Error(), "/nonexistent/mcp-server") {
		t.Fatalf("err = %v, want ErrStart naming the command", err)
	}
}

func TestMissingWorkingDirectoryIsNamed(t *testing.T) {
	s := demoServer(t, "demo")
	s.Cwd = "/nonexistent/dir"
	p := newPool(t, pool.Options{}, s)
	_, err := call(t.Context(), p, pool.Target{Server: "demo", Key: "global"}, "pid", nil)
	if !errors.Is(err, pool.ErrStart) || !strings.Contains(err.Error(), `working directory "/nonexistent/dir" (from config)`) {
		t.Fatalf("err = %v, want ErrStart naming the working directory and its source", err)
	}
}

func TestCallerGoneIsNotATimeout(t *testing.T) {
	p := newPool(t, pool.Options{}, demoServer(t, "demo"))
	tg := pool.Target{Server: "demo", Key: "global"}
	mustCall(t, p, tg, "pid", nil)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := call(ctx, p, tg, "sleep", map[string]int{"ms": 60000})
	if !errors.Is(err, pool.ErrCanceled) || errors.Is(err, pool.ErrTimeout) {
		t.Fatalf("err = %v, want ErrCanceled", err)
	}
	mustCall(t, p, tg, "pid", nil)
}

func TestManyConcurrentCallersLandOnTheirInstance(t *testing.T) {
	s := demoServer(t, "demo")
	s.Max = 10
	p := newPool(t, pool.Options{}, s)
	roots := make([]string, 10)
	for i := range roots {
		roots[i] = realDir(t)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	pids := make([]sync.Map, 10)
	for i := range 100 {
		wg.Go(func() {
			root := roots[i%10]
			tg := pool.Target{Server: "demo", Key: "cwd:" + root, Root: root}
			msg := fmt.Sprintf("caller %d", i)
			if got, err := call(t.Context(), p, tg, "echo", map[string]string{"message": msg}); err != nil || got != msg {
				errs <- fmt.Errorf("caller %d echo = %q, %v", i, got, err)
				return
			}
			got, err := call(t.Context(), p, tg, "cwd", nil)
			if err != nil || got != root {
				errs <- fmt.Errorf("caller %d cwd = %q, %v; want %q", i, got, err, root)
				return
			}
			pid, _ := call(t.Context(), p, tg, "pid", nil)
			pids[i%10].Store(pid, true)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[any]int{}
	for i := range pids {
		n := 0
		pids[i].Range(func(k, _ any) bool { n++; seen[k]++; return true })
		if n != 1 {
			t.Errorf("key %d was served by %d processes, want 1", i, n)
		}
	}
	if len(seen) != 10 {
		t.Errorf("%d distinct processes for 10 keys", len(seen))
	}
}

func TestSetServersReplacesOnlyChanged(t *testing.T) {
	a, b := demoServer(t, "a"), demoServer(t, "b")
	p := newPool(t, pool.Options{}, a, b)
	ga, gb := pool.Target{Server: "a", Key: "global"}, pool.Target{Server: "b", Key: "global"}
	pa, _ := strconv.Atoi(mustCall(t, p, ga, "pid", nil))
	pb, _ := strconv.Atoi(mustCall(t, p, gb, "pid", nil))
	b2 := demoServer(t, "b")
	b2.Env["X"] = "changed"
	p.SetServers([]pool.Server{a, b2})
	waitGone(t, pb)
	if !alive(pa) {
		t.Error("unchanged server's instance was stopped")
	}
	if got := mustCall(t, p, gb, "env", map[string]string{"name": "X"}); got != "changed" {
		t.Errorf("replaced instance env X = %q", got)
	}
}

func TestCloseDrainsInFlightCalls(t *testing.T) {
	proctest.CheckNoLeaks(t)
	p := pool.New(pool.Options{ReapInterval: -1})
	p.SetServers([]pool.Server{demoServer(t, "demo")})
	tg := pool.Target{Server: "demo", Key: "global"}
	mustCall(t, p, tg, "pid", nil)
	res := make(chan error, 1)
	go func() { _, err := call(context.Background(), p, tg, "sleep", map[string]int{"ms": 300}); res <- err }()
	for p.Instances()[0].InFlight == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Close(ctx)
	if err := <-res; err != nil {
		t.Errorf("in-flight call during Close: %v, want it drained to completion", err)
	}
	if _, err := call(t.Context(), p, tg, "pid", nil); !errors.Is(err, pool.ErrClosed) {
		t.Errorf("call after Close: %v, want ErrClosed", err)
	}
}

// A daemon killed without Close (SIGKILL, a crash, the OOM killer) takes its
// children with it: nothing is orphaned.
func TestChildrenDieWithAKilledDaemon(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d, child := startStandIn(t, envPoolDaemon+"=1")
	d.Process.Kill()
	d.Wait()
	waitGone(t, child)
}

// Stopping an instance whose child is still starting, with a stop deadline
// shorter than the start, must still stop that child once it is up, and
// Close must return.
func TestStopDuringAStartLeavesNoChild(t *testing.T) {
	s := demoServer(t, "slow")
	s.Command, s.Args = "/bin/sh", []string{"-c", `sleep 0.5; exec "$0"`, os.Args[0]}
	p := newPool(t, pool.Options{}, s)
	tg := pool.Target{Server: "slow", Key: "global"}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	call(ctx, p, tg, "pid", nil) // gives up while the child starts
	st := p.Instances()
	if len(st) != 1 || st[0].State != pool.StateStarting {
		t.Fatalf("instances %+v, want one starting", st)
	}
	after := lastEvent(p)
	sctx, scancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer scancel()
	if err := p.Stop(sctx, st[0].ID); err != nil {
		t.Fatal(err)
	}
	// The start finishes after the stopper gave up (the child sleeps 0.5 s
	// before serving): its child must still be stopped, by the pool, before
	// Close; a child nobody stops would keep its watcher, and Close,
	// waiting forever.
	waitEvents(t, p.Events(), after, "the late child's exit", func(ev pool.Event) bool {
		return ev.Kind == pool.EventExit && ev.Instance == st[0].ID && ev.Pid != 0
	})
	closed := make(chan struct{})
	go func() {
		p.Close(context.Background())
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return: the child started after Stop was never stopped")
	}
}

func TestPanickingCallerReleasesTheInstance(t *testing.T) {
	s := demoServer(t, "demo")
	s.Exclusive = true
	p := newPool(t, pool.Options{}, s)
	tg := pool.Target{Server: "demo", Key: "global"}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not propagate")
			}
		}()
		p.Do(t.Context(), tg, func(*client.Session) error { panic("handler bug") })
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := call(ctx, p, tg, "pid", nil); err != nil {
		t.Fatalf("exclusive instance after a panicking caller: %v", err)
	}
	if st := p.Instances(); st[0].InFlight != 0 {
		t.Errorf("in-flight = %d after every call ended", st[0].InFlight)
	}
}

// TestCloseTwice: Close may be called again (the broker's forced stop
// closes the pool before the broker's Close does): the first stops the
// child and returns nil, the second does nothing more and returns nil,
// and a call after them is refused with ErrClosed.
func TestCloseTwice(t *testing.T) {
	p := newPool(t, pool.Options{}, demoServer(t, "demo"))
	tg := pool.Target{Server: "demo", Key: "global"}
	pid, _ := strconv.Atoi(mustCall(t, p, tg, "pid", nil))
	if err := p.Close(t.Context()); err != nil {
		t.Errorf("the first Close: %v, want nil", err)
	}
	if alive(pid) {
		t.Errorf("child %d alive after Close returned", pid)
	}
	if err := p.Close(t.Context()); err != nil { // and newPool's cleanup closes it a third time
		t.Errorf("the second Close: %v, want nil", err)
	}
	if _, err := call(t.Context(), p, tg, "pid", nil); !errors.Is(err, pool.ErrClosed) {
		t.Errorf("a call after Close: %v, want ErrClosed", err)
	}
}

// TestRootsMemoOutlivesThePool: what a pool learns about a definition's
// children (the demo server never asks roots/list) is kept in MemoFile, so
// the next pool — a restarted daemon — does not wait for them again.
func TestRootsMemoOutlivesThePool(t *testing.T) {
	memo := filepath.Join(t.TempDir(), "memo.json")
	// The start-up roots wait is the handshake era's: a stateless child
	// asks within the request that needs its roots.
	s := demoServer(t, "demo", demo.EnvEra+"=handshake")
	run := func() string {
		logs := &testenv.SyncBuffer{}
		// A RootsWait far beyond the call's deadline: a child that never
		// asks must cost a ping's round trip, not the wait.
		p := newPool(t, pool.Options{MemoFile: memo, RootsWait: time.Hour,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, s)
		root := t.TempDir()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := call(ctx, p, pool.Target{Server: "demo", Key: "cwd:" + root, Root: root}, "echo", map[string]any{"message": "hi"}); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		return logs.String()
	}
	const waited = "did not ask roots/list at start-up"
	if first := run(); !strings.Contains(first, waited) {
		t.Fatalf("the first pool did not learn that the demo server never asks:\n%s", first)
	}
	var doc struct {
		Version   int
		RootsList map[string]bool
	}
	b, err := os.ReadFile(memo)
	if err != nil || json.Unmarshal(b, &doc) != nil || doc.Version != 1 || len(doc.RootsList) != 1 {
		t.Fatalf("memo file %s: %s, %v", memo, b, err)
	}
	for _, asks := range doc.RootsList {
		if asks {
			t.Errorf("memo says the demo server asks roots/list: %s", b)
		}
	}
	if fi, err := os.Stat(memo); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("memo file mode: %v, %v; want 0600", fi.Mode(), err)
	}
	if second := run(); strings.Contains(second, waited) {
		t.Errorf("the second pool waited for roots/list again:\n%s", second)
	}
}
