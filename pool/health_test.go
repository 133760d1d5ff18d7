package pool_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool"
)

// pidOf is the pid of the ready child of key; 0 when there is none.
func pidOf(p *pool.Pool, key string) int {
	for _, st := range p.Instances() {
		if st.Key == key && st.State == pool.StateReady {
			return st.Pid
		}
	}
	return 0
}

// lastEvent is the id of p's newest event.
func lastEvent(p *pool.Pool) uint64 {
	evs, _, _ := p.Events().Since(0)
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].ID
}

// TestHealthReplacesAStoppedIdleChild: an idle child that stops answering
// (SIGSTOP) is found by the health check's ping, killed as wedged and
// replaced by a new child, with no caller involved.
func TestHealthReplacesAStoppedIdleChild(t *testing.T) {
	const interval = 400 * time.Millisecond
	def := demoServer(t, "demo")
	def.HealthInterval, def.HealthTimeout = interval, 150*time.Millisecond
	p := newPool(t, pool.Options{}, def)
	tg := pool.Target{Server: "demo", Key: "global"}
	pid, _ := strconv.Atoi(mustCall(t, p, tg, "pid", nil))
	after := lastEvent(p)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT); syscall.Kill(pid, syscall.SIGKILL) })
	testenv.WaitFor(t, "the child stopped", func() bool { return proctest.Stopped(pid) })
	stopped := time.Now()

	evs := waitEvents(t, p.Events(), after, "ready after wedged", func(ev pool.Event) bool { return ev.Kind == pool.EventReady })
	took := time.Since(stopped)
	if count(evs, pool.EventWedged) != 1 {
		t.Fatalf("events = %+v, want one wedged before the new child's ready", evs)
	}
	for _, ev := range evs {
		if ev.Kind == pool.EventWedged && (ev.Pid != pid || !strings.Contains(ev.Reason, "health check")) {
			t.Errorf("wedged event = %+v, want pid %d and a reason naming the health check", ev, pid)
		}
	}
	waitGone(t, pid)
	pid2 := pidOf(p, "global")
	if pid2 == 0 || pid2 == pid {
		t.Fatalf("after the wedge: ready pid %d, want a new child (old %d)", pid2, pid)
	}
	if s := p.Stats(); s.Wedged != 1 {
		t.Errorf("stats = %+v, want 1 wedged", s)
	}
	// Not a wall-clock assertion: the log shows the bound the docs state.
	t.Logf("replaced %s after the stop: %.2f intervals (the bound is 2)", took.Round(time.Millisecond), float64(took)/float64(interval))
	if got := mustCall(t, p, tg, "pid", nil); got != strconv.Itoa(pid2) {
		t.Errorf("the next call ran on pid %s, want the replacement %d", got, pid2)
	}
}

// TestHealthLeavesAnsweringChildrenAlone: a child that answers its pings
// is kept, however many it answers.
func TestHealthLeavesAnsweringChildrenAlone(t *testing.T) {
	// The handshake era's pings are ping requests; a stateless child is
	// sent server/discover, as it is at its start.
	reqs := filepath.Join(t.TempDir(), "requests")
	def := demoServer(t, "demo", demo.EnvEra+"=handshake", demo.EnvRequestLog+"="+reqs)
	def.HealthInterval, def.HealthTimeout = 100*time.Millisecond, 80*time.Millisecond
	p := newPool(t, pool.Options{}, def)
	tg := pool.Target{Server: "demo", Key: "global"}
	pid := mustCall(t, p, tg, "pid", nil)
	after := lastEvent(p)
	const pings = 10
	testenv.WaitFor(t, fmt.Sprintf("the child to be sent %d health pings", pings), func() bool { return requests(reqs, "ping") >= pings })
	evs, _, _ := p.Events().Since(after)
	if len(evs) != 0 || mustCall(t, p, tg, "pid", nil) != pid {
		t.Errorf("after %d pings: events %+v, want none and the same child %s", requests(reqs, "ping"), evs, pid)
	}
}

// requests counts the requests of method in a demo server's request log
// (demo.EnvRequestLog).
func requests(log, method string) int {
	b, _ := os.ReadFile(log)
	n := 0
	for line := range strings.Lines(string(b)) {
		if strings.TrimSpace(line) == method {
			n++
		}
	}
	return n
}

// TestMinKeepsAnInstanceThroughACrash: with min 1 a global server's
// instance is started with no caller, and a child killed by SIGKILL is
// replaced by a new one, again with no caller.
func TestMinKeepsAnInstanceThroughACrash(t *testing.T) {
	def := demoServer(t, "demo")
	def.Min = 1
	def.Keys = []pool.Target{{Server: "demo", Key: "global"}}
	p := newPool(t, pool.Options{}, def)
	var pid int
	testenv.WaitFor(t, "the kept instance started", func() bool { pid = pidOf(p, "global"); return pid != 0 })
	after := lastEvent(p)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	evs := waitEvents(t, p.Events(), after, "ready after the crash", func(ev pool.Event) bool { return ev.Kind == pool.EventReady })
	if count(evs, pool.EventCrash) != 1 {
		t.Errorf("events = %+v, want one crash then ready", evs)
	}
	if pid2 := pidOf(p, "global"); pid2 == 0 || pid2 == pid {
		t.Errorf("after the crash: ready pid %d, want a new child (old %d)", pid2, pid)
	}
	// A kept instance is not reaped for idleness.
	p.Reap()
	if pidOf(p, "global") == 0 {
		t.Error("the reaper stopped the kept instance")
	}
}

// TestMinKeepsTheLastKeysUsed: a server with no known key keeps the
// instances of the last min keys used; an older key is reaped as usual.
func TestMinKeepsTheLastKeysUsed(t *testing.T) {
	clk := newClock()
	def := demoServer(t, "demo")
	def.Min = 1
	p := newPool(t, pool.Options{Now: clk.Now, IdleTimeout: time.Minute}, def)
	a, b := pool.Target{Server: "demo", Key: "session:a"}, pool.Target{Server: "demo", Key: "session:b"}
	mustCall(t, p, a, "pid", nil)
	pid := mustCall(t, p, b, "pid", nil)
	clk.Add(2 * time.Minute)
	p.Reap()
	testenv.WaitFor(t, "session:a reaped", func() bool { return len(p.Instances()) == 1 })
	if st := p.Instances(); st[0].Key != "session:b" || strconv.Itoa(st[0].Pid) != pid {
		t.Errorf("instances = %+v, want session:b's child %s kept", st, pid)
	}
}

// TestWarmListsToolsAtSetServers: a warm server's known key gets a child
// at SetServers, with no caller, whose tools then answer from the cache.
func TestWarmListsToolsAtSetServers(t *testing.T) {
	def := demoServer(t, "demo")
	def.Warm = true
	def.Keys = []pool.Target{{Server: "demo", Key: "global"}}
	p := newPool(t, pool.Options{}, def)
	tg := pool.Target{Server: "demo", Key: "global"}
	testenv.WaitFor(t, "the warm child started", func() bool { return pidOf(p, "global") != 0 })
	for _, st := range p.Instances() {
		p.Stop(t.Context(), st.ID)
	}
	if _, ok := p.ToolListing(t.Context(), tg); !ok {
		t.Fatal("no tool listing in the cache after the warm start")
	}
}

// TestLifeFieldsReplaceNoInstance: changing only health, min or warm keeps
// the running child.
func TestLifeFieldsReplaceNoInstance(t *testing.T) {
	def := demoServer(t, "demo")
	p := newPool(t, pool.Options{}, def)
	tg := pool.Target{Server: "demo", Key: "global"}
	pid := mustCall(t, p, tg, "pid", nil)
	def.HealthInterval, def.Min = time.Minute, 1
	p.SetServers([]pool.Server{def})
	if got := mustCall(t, p, tg, "pid", nil); got != pid {
		t.Errorf("pid %s after a health/min change, want the same child %s", got, pid)
	}
}

// TestMinForgetsAKeyStoppedByRequest: an instance stopped by request is
// not started again for its key, though min keeps the last keys used (it
// starts that key's instance again while it is not stopped). In a bubble
// (synctest_test.go), where the keeper's ticks pass in no time.
func TestMinForgetsAKeyStoppedByRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newOfflinePool(t, pool.Options{ReapInterval: -1})
		p.SetServers([]pool.Server{{Name: "remote", URL: "http://remote.invalid/mcp", Min: 1}})
		failStart(t, p) // the last key used, its instance not running
		after := lastEvent(p)
		time.Sleep(2 * time.Second) // two ticks of the keeper
		synctest.Wait()
		if evs, _, _ := p.Events().Since(after); count(evs, pool.EventSpawn) == 0 {
			t.Fatalf("in two ticks min started nothing for the last key used: events %+v", evs)
		}
		if err := p.Stop(t.Context(), p.Instances()[0].ID); err != nil {
			t.Fatal(err)
		}
		after = lastEvent(p)
		time.Sleep(10 * time.Second) // ten ticks of the keeper
		synctest.Wait()
		evs, _, _ := p.Events().Since(after)
		if count(evs, pool.EventSpawn) != 0 || len(p.Instances()) != 0 {
			t.Errorf("after the stop: events %+v, instances %+v; want none started", evs, p.Instances())
		}
	})
}

// TestHealthURLFailsAURLServer: a url server's health URL is fetched at
// each health check beside the ping; an answer other than the one
// expected fails the check as an unanswered ping does (a wedged event
// and status naming the URL and the status), and a new connection is
// opened in the old one's place.
func TestHealthURLFailsAURLServer(t *testing.T) {
	t.Parallel()
	var status atomic.Int32
	status.Store(http.StatusNoContent)
	var checks atomic.Int32
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			checks.Add(1)
			w.WriteHeader(int(status.Load()))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	def := pool.Server{Name: "remote", URL: srv.URL + "/mcp", HealthInterval: 800 * time.Millisecond, HealthTimeout: 400 * time.Millisecond,
		HealthURL: srv.URL + "/healthz", HealthExpect: http.StatusNoContent}
	p := newPool(t, pool.Options{}, def)
	tg := pool.Target{Server: "remote", Key: "global"}
	mustCall(t, p, tg, "echo", map[string]any{"message": "hi"})
	testenv.WaitFor(t, "a passing health check", func() bool { return checks.Load() >= 1 })
	if s := p.Stats(); s.Wedged != 0 {
		evs, _, _ := p.Events().Since(0)
		t.Fatalf("stats = %+v after passing checks, want none wedged; events %+v", s, evs)
	}
	after := lastEvent(p)
	status.Store(http.StatusServiceUnavailable)
	evs := waitEvents(t, p.Events(), after, "a wedged event", func(ev pool.Event) bool { return ev.Kind == pool.EventWedged })
	ev := evs[len(evs)-1]
	want := "GET " + srv.URL + "/healthz answered 503, want 204"
	if !strings.Contains(ev.Reason, "health check") || !strings.Contains(ev.Reason, want) {
		t.Errorf("wedged event reason = %q, want it to name the health check and %q", ev.Reason, want)
	}
	status.Store(http.StatusNoContent)
	if got := mustCall(t, p, tg, "echo", map[string]any{"message": "again"}); got != "again" {
		t.Errorf("echo after the failed check = %q", got)
	}
}
