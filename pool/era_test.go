package pool_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/pool"
)

// The era probe: a stdio child is probed with server/discover for
// client.DefaultProbeWait (5 s); one silent that long is not initialized
// but replaced, within the same start, by a fresh child opened with
// initialize.

// methodsByPid reads a demo request log written with
// demo.EnvRequestLogPid=1: the methods each child received, by pid, and
// the pids in the order they first wrote.
func methodsByPid(t *testing.T, path string) (map[int][]string, []int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	by := map[int][]string{}
	var order []int
	for line := range strings.Lines(string(b)) {
		p, method, ok := strings.Cut(strings.TrimSpace(line), " ")
		pid, err := strconv.Atoi(p)
		if !ok || err != nil {
			t.Fatalf("request log line %q: want <pid> <method>", line)
		}
		if _, seen := by[pid]; !seen {
			order = append(order, pid)
		}
		by[pid] = append(by[pid], method)
	}
	return by, order
}

// eraDemo is a dual-era demo server whose server/discover answer comes
// after delay, logging what each child receives to the returned file.
func eraDemo(t *testing.T, delay string) (pool.Server, string) {
	reqs := filepath.Join(t.TempDir(), "requests")
	s := demoServer(t, "demo", demo.EnvDiscoverDelay+"="+delay, demo.EnvRequestLog+"="+reqs, demo.EnvRequestLogPid+"=1")
	s.StartTimeout = time.Minute // the bound is the probe's, not the start's
	return s, reqs
}

// TestSlowProbeAnswerNeverMeetsInitialize: a dual-era child that answers
// server/discover after 6 s (a cold start on a loaded machine, past the
// 5 s probe wait) is never sent initialize on the process that has the
// probe pending (the go-sdk would refuse it, `duplicate "initialize"
// received`, or serve two eras in one process). It is either served
// stateless, had it answered within the bound, or replaced by a fresh
// child served by the handshake; either way the caller's first call
// succeeds.
func TestSlowProbeAnswerNeverMeetsInitialize(t *testing.T) {
	s, reqs := eraDemo(t, "6s")
	p := newPool(t, pool.Options{}, s)
	tg := pool.Target{Server: "demo", Key: "global"}
	if got := mustCall(t, p, tg, "echo", map[string]string{"message": "late"}); got != "late" {
		t.Errorf("echo = %q", got)
	}
	by, order := methodsByPid(t, reqs)
	for pid, methods := range by {
		if slices.Contains(methods, "server/discover") && slices.Contains(methods, "initialize") {
			t.Errorf("child %d saw %v: initialize sent to a child whose probe was pending", pid, methods)
		}
	}
	serving := p.Instances()[0].Pid
	switch proto := protocolOf(p, "demo"); {
	case proto == jsonrpc.StatelessVersion:
		if len(order) != 1 || order[0] != serving {
			t.Errorf("served stateless by %d, but children %v ran", serving, order)
		}
	case len(order) == 2 && order[1] == serving:
		if got := by[order[0]]; !slices.Equal(got, []string{"server/discover"}) {
			t.Errorf("the probed child saw %v, want the probe alone", got)
		}
		if got := by[serving]; len(got) == 0 || got[0] != "initialize" || slices.Contains(got, "server/discover") {
			t.Errorf("the fresh child saw %v, want initialize first and no probe", got)
		}
		if alive(order[0]) {
			t.Errorf("the probed child %d still runs beside its replacement", order[0])
		}
	default:
		t.Errorf("protocol %q served by %d; children in order %v, by pid %v", proto, serving, order, by)
	}
}

// TestUnansweredProbeStartsAFreshChild: a child that never answers
// server/discover (a server of the handshake era that ignores requests
// before initialize) is killed after the probe wait, having seen the probe
// alone, and the same start, its caller still waiting, opens a fresh child
// with initialize, which serves the first call. The definition's next
// start skips the probe: the era is remembered.
func TestUnansweredProbeStartsAFreshChild(t *testing.T) {
	s, reqs := eraDemo(t, "1h")
	p := newPool(t, pool.Options{}, s)
	tg := pool.Target{Server: "demo", Key: "global"}
	if got := mustCall(t, p, tg, "echo", map[string]string{"message": "legacy"}); got != "legacy" {
		t.Errorf("echo = %q", got)
	}
	// Right when the caller has its answer.
	left := proctest.Marked(t)
	by, order := methodsByPid(t, reqs)
	if len(order) != 2 {
		t.Fatalf("children in order %v, by pid %v; want the probed one, then a fresh one", order, by)
	}
	probed, fresh := order[0], order[1]
	if got := by[probed]; !slices.Equal(got, []string{"server/discover"}) {
		t.Errorf("the probed child saw %v, want the probe alone", got)
	}
	if got := by[fresh]; len(got) == 0 || got[0] != "initialize" || slices.Contains(got, "server/discover") {
		t.Errorf("the fresh child saw %v, want initialize first and no probe", got)
	}
	if !slices.Equal(left, []int{fresh}) {
		t.Errorf("children running when the call returned: %v, want the fresh one %d alone (probed: %d)", left, fresh, probed)
	}
	if st := p.Instances()[0]; st.Pid != fresh || st.Protocol == jsonrpc.StatelessVersion {
		t.Errorf("instance served by %d with %q, want %d with the handshake", st.Pid, st.Protocol, fresh)
	}

	// The definition's second start.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := p.Stop(ctx, p.Instances()[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(reqs); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got := mustCall(t, p, tg, "echo", map[string]string{"message": "again"}); got != "again" {
		t.Errorf("echo = %q", got)
	}
	by, order = methodsByPid(t, reqs)
	if len(order) != 1 || len(by[order[0]]) == 0 || by[order[0]][0] != "initialize" || slices.Contains(by[order[0]], "server/discover") {
		t.Errorf("second start: children %v saw %v, want one child, initialized with no probe", order, by)
	}
	t.Logf("second start and call: %s (the first paid the %s probe wait)", time.Since(start), client.DefaultProbeWait)
}
