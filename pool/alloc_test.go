package pool_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/pool"
)

// freePorts finds n consecutive ports the test can bind now, below the
// Linux ephemeral range so that outgoing connections do not wander in.
func freePorts(t *testing.T, n int) (lo, hi int) {
	t.Helper()
	for range 200 {
		lo = 20000 + rand.IntN(10000)
		ok := true
		for p := lo; p < lo+n && ok; p++ {
			ok = canBind(p)
		}
		if ok {
			return lo, lo + n - 1
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0, 0
}

func canBind(port int) bool {
	ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// allocServer is the demo server with a port allocation and every
// per-instance placeholder in its environment.
func allocServer(t *testing.T, lo, hi int) pool.Server {
	s := demoServer(t, "demo")
	s.Allocate = map[string]pool.Alloc{"port": {Range: [2]int{lo, hi}}}
	s.Env["PORT"] = "${mcpx.alloc.port}"
	s.Env["IDX"] = "${mcpx.index}"
	s.Env["INST"] = "${mcpx.instance}"
	s.Env["KEY"] = "${mcpx.key}"
	return s
}

func envOf(t *testing.T, p *pool.Pool, key, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := call(ctx, p, pool.Target{Server: "demo", Key: key}, "env", map[string]any{"name": name})
	if err != nil {
		t.Fatalf("env %s of %s: %v", name, key, err)
	}
	return v
}

func portOf(t *testing.T, p *pool.Pool, key string) int {
	t.Helper()
	v := envOf(t, p, key, "PORT")
	port, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("PORT of %s = %q, not a port", key, v)
	}
	return port
}

func statusOf(t *testing.T, p *pool.Pool, key string) pool.InstanceStatus {
	t.Helper()
	for _, st := range p.Instances() {
		if st.Key == key {
			return st
		}
	}
	t.Fatalf("no instance for %s in %+v", key, p.Instances())
	return pool.InstanceStatus{}
}

func TestAllocDistinctUnderConcurrentFirstCalls(t *testing.T) {
	lo, hi := freePorts(t, 6)
	p := newPool(t, pool.Options{}, allocServer(t, lo, hi))
	keys := []string{"session:a", "session:b", "session:c", "session:d"}
	ports := make([]int, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() { ports[i] = portOf(t, p, k) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got := slices.Sorted(slices.Values(ports))
	if len(slices.Compact(slices.Clone(got))) != len(keys) || got[0] < lo || got[len(got)-1] > hi {
		t.Fatalf("ports %v: want %d distinct ports in [%d, %d]", ports, len(keys), lo, hi)
	}
	var idx []string
	for i, k := range keys {
		st := statusOf(t, p, k)
		if st.Alloc["port"] != ports[i] {
			t.Errorf("%s: status says port %d, the child got %d", k, st.Alloc["port"], ports[i])
		}
		if inst := envOf(t, p, k, "INST"); inst != st.ID {
			t.Errorf("%s: ${mcpx.instance} = %q, status id %q", k, inst, st.ID)
		}
		if want := pool.SafeKey(k); envOf(t, p, k, "KEY") != want {
			t.Errorf("%s: ${mcpx.key} = %q, want %q", k, envOf(t, p, k, "KEY"), want)
		}
		idx = append(idx, envOf(t, p, k, "IDX"))
		// The pool held the port until the exec, and no longer: the
		// child (which does not listen) left it free.
		if !canBind(ports[i]) {
			t.Errorf("%s: port %d is still held by the pool after the child started", k, ports[i])
		}
	}
	slices.Sort(idx)
	if !slices.Equal(idx, []string{"0", "1", "2", "3"}) {
		t.Errorf("${mcpx.index} of the 4 instances = %v, want 0..3", idx)
	}
}

func TestAllocStoppedPortIsReused(t *testing.T) {
	lo, hi := freePorts(t, 2)
	p := newPool(t, pool.Options{}, allocServer(t, lo, hi))
	a, b := portOf(t, p, "session:a"), portOf(t, p, "session:b")
	if a == b {
		t.Fatalf("two live instances share port %d", a)
	}
	st := statusOf(t, p, "session:a")
	if err := p.Stop(context.Background(), st.ID); err != nil {
		t.Fatal(err)
	}
	if c := portOf(t, p, "session:c"); c != a {
		t.Errorf("session:c got port %d, want %d, freed when session:a stopped", c, a)
	}
	if idx := envOf(t, p, "session:c", "IDX"); idx != strconv.Itoa(st.Index) {
		t.Errorf("session:c got index %s, want %d, freed when session:a stopped", idx, st.Index)
	}
}

func TestAllocRestartKeepsPort(t *testing.T) {
	lo, hi := freePorts(t, 2)
	p := newPool(t, pool.Options{}, allocServer(t, lo, hi))
	before := portOf(t, p, "session:a")
	pid := statusOf(t, p, "session:a").Pid
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := call(ctx, p, pool.Target{Server: "demo", Key: "session:a"}, "crash", nil); !errors.Is(err, pool.ErrCrashed) {
		t.Fatalf("crash: err = %v, want ErrCrashed", err)
	}
	if after := portOf(t, p, "session:a"); after != before {
		t.Errorf("after a crash the instance's port moved from %d to %d", before, after)
	}
	if st := statusOf(t, p, "session:a"); st.Pid == pid || st.Restarts != 1 {
		t.Errorf("status after the crash: pid %d (was %d), restarts %d; want a new child", st.Pid, pid, st.Restarts)
	}
}

func TestAllocExhausted(t *testing.T) {
	lo, hi := freePorts(t, 2)
	clk := newClock()
	p := newPool(t, pool.Options{Now: clk.Now}, allocServer(t, lo, hi))
	a, b := portOf(t, p, "session:a"), portOf(t, p, "session:b")
	pids := []int{statusOf(t, p, "session:a").Pid, statusOf(t, p, "session:b").Pid}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	third := pool.Target{Server: "demo", Key: "session:c"}
	var err error
	for range 3 {
		_, err = call(ctx, p, third, "env", map[string]any{"name": "PORT"})
		if !errors.Is(err, pool.ErrStart) {
			t.Fatalf("third session: err = %v, want ErrStart", err)
		}
	}
	for _, want := range []string{`server "demo"`, "allocate.port.range", "no free port in the range [" + strconv.Itoa(lo) + ", " + strconv.Itoa(hi) + "]", "2 of 2 held by other instances"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// Failing starts back off like any other: no start is even tried.
	if _, err := call(ctx, p, third, "env", map[string]any{"name": "PORT"}); !errors.Is(err, pool.ErrBackoff) {
		t.Errorf("fourth call: err = %v, want ErrBackoff", err)
	}
	if st := statusOf(t, p, "session:c"); st.Pid != 0 || st.Alloc != nil {
		t.Errorf("the third session has pid %d and ports %v; want neither", st.Pid, st.Alloc)
	}
	// The first two keep working, on the same children and ports.
	if portOf(t, p, "session:a") != a || portOf(t, p, "session:b") != b {
		t.Error("the first two sessions' ports moved")
	}
	if got := []int{statusOf(t, p, "session:a").Pid, statusOf(t, p, "session:b").Pid}; !slices.Equal(got, pids) {
		t.Errorf("the first two sessions' pids went from %v to %v", pids, got)
	}
}

func TestAllocSkipsPortHeldElsewhere(t *testing.T) {
	lo, hi := freePorts(t, 2)
	ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(lo))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := newPool(t, pool.Options{}, allocServer(t, lo, hi))
	if got := portOf(t, p, "session:a"); got != hi {
		t.Errorf("got port %d, want %d: %d is held by someone else", got, hi, lo)
	}
}

func TestTmpDirLivesWithTheInstance(t *testing.T) {
	base := t.TempDir()
	s := demoServer(t, "demo")
	s.Env["TMP"] = "${mcpx.tmpdir}"
	s.Cwd = "${mcpx.tmpdir}"
	p := newPool(t, pool.Options{TmpDir: base}, s)
	dir := envOf(t, p, "session:a", "TMP")
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("${mcpx.tmpdir} = %q: %v, %v; want a 0700 directory", dir, fi, err)
	}
	realBase, _ := filepath.EvalSymlinks(base)
	if !strings.HasPrefix(dir, realBase+string(filepath.Separator)) {
		t.Errorf("${mcpx.tmpdir} = %q is not under %q", dir, realBase)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cwd, err := call(ctx, p, pool.Target{Server: "demo", Key: "session:a"}, "cwd", nil); err != nil || cwd != dir {
		t.Errorf("the child's cwd is %q (%v), want its tmpdir %q", cwd, err, dir)
	}
	if other := envOf(t, p, "session:b", "TMP"); other == dir {
		t.Errorf("two instances share the tmpdir %q", dir)
	}
	st := statusOf(t, p, "session:a")
	if st.TmpDir != dir {
		t.Errorf("status says tmpdir %q, want %q", st.TmpDir, dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "state"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the tmpdir %q is still there after its instance stopped: %v", dir, err)
	}
	p.Close(ctx)
	if ents, _ := os.ReadDir(base); len(ents) != 0 {
		t.Errorf("%s holds %d entries after Close, want none", base, len(ents))
	}
}

func TestTmpDirSweepsDeadDaemonsRuns(t *testing.T) {
	base := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, fmt.Sprintf("run-%d-1", dead.Process.Pid))
	live := filepath.Join(base, "run-1-1") // init never dies
	other := filepath.Join(base, "notes")
	for _, d := range []string{stale, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "demo-1-x"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s := demoServer(t, "demo")
	s.Env["TMP"] = "${mcpx.tmpdir}"
	p := newPool(t, pool.Options{TmpDir: base}, s)
	envOf(t, p, "session:a", "TMP")
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run directory of dead pid %d is still there: %v", dead.Process.Pid, err)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

func TestAllocRestartRefusesATakenPort(t *testing.T) {
	lo, hi := freePorts(t, 2)
	p := newPool(t, pool.Options{}, allocServer(t, lo, hi))
	port := portOf(t, p, "session:a")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tg := pool.Target{Server: "demo", Key: "session:a"}
	if _, err := call(ctx, p, tg, "crash", nil); !errors.Is(err, pool.ErrCrashed) {
		t.Fatalf("crash: err = %v, want ErrCrashed", err)
	}
	// Someone else binds the port while the instance has no child.
	ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = call(ctx, p, tg, "env", map[string]any{"name": "PORT"})
	if !errors.Is(err, pool.ErrStart) || !strings.Contains(err.Error(), "allocate.port: port "+strconv.Itoa(port)+" is now in use by another process") {
		t.Fatalf("restart with the port taken: err = %v, want ErrStart saying so", err)
	}
	ln.Close()
	if got := portOf(t, p, "session:a"); got != port {
		t.Errorf("once the port is free again the instance got %d, want %d", got, port)
	}
}
