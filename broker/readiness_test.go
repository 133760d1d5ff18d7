package broker_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// envSlowRoots makes this test binary, re-exec'd, an MCP server that asks
// roots/list on notifications/initialized and applies the answer a second
// later (as server-filesystem does on a loaded machine, on node's thread
// pool), then says so on stderr ("roots applied"). Its tool "root" answers
// the root it has applied so far, "" before.
const envSlowRoots = "MCPX_TEST_SLOW_ROOTS"

// slowRootsDelay is longer than any settle mcpx could guess (at most half
// a second), so only the child's own word makes the first call right.
const slowRootsDelay = time.Second

func maybeSlowRoots() {
	if os.Getenv(envSlowRoots) == "" {
		return
	}
	var mu sync.Mutex // guards out and root
	out := bufio.NewWriter(os.Stdout)
	root := ""
	send := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var m fakeMsg
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Method == "notifications/initialized":
			send(`{"jsonrpc":"2.0","id":"roots","method":"roots/list"}`)
		case m.Method == "" && string(m.ID) == `"roots"`:
			if len(m.Result.Roots) > 0 {
				uri := m.Result.Roots[0].URI
				go func() {
					time.Sleep(slowRootsDelay)
					mu.Lock()
					root = uri
					mu.Unlock()
					fmt.Fprintln(os.Stderr, "roots applied:", uri)
				}()
			}
		case m.ID == nil:
		case m.Method == "initialize":
			send(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"slow","version":"0"}}}`, m.ID, m.Params.ProtocolVersion)
		case m.Method == "tools/list":
			send(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"root","inputSchema":{"type":"object"}}]}}`, m.ID)
		case m.Method == "tools/call":
			mu.Lock()
			r := root
			mu.Unlock()
			send(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, m.ID, r)
		default:
			send(`{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
		}
	}
	os.Exit(0)
}

// startSlowRootsBroker serves the slow-roots child as "slow", cwd-scoped,
// with ready.stderr ready ("" = none) and startTimeout (0 = the default).
func startSlowRootsBroker(t *testing.T, ready string, startTimeout time.Duration) *broker.Broker {
	return startDemoBroker(t, demoSetup{
		scopes: map[string]config.ScopeKind{"slow": config.ScopeCwd},
		server: func(s *config.Server) {
			delete(s.Env, demo.EnvServer)
			s.Env[envSlowRoots] = "1"
			if ready != "" {
				s.Ready = &config.Ready{Stderr: ready}
			}
			if startTimeout > 0 {
				s.StartTimeout = config.Duration(startTimeout)
			}
		},
	})
}

// A server whose config names its readiness signal ("ready": {"stderr":
// …}) gets its first call only once the child has said it applied its
// roots, however long that takes: the first call from each fresh
// directory sees that directory.
func TestReadyStderrHoldsTheFirstCallUntilRootsApplied(t *testing.T) {
	b := startSlowRootsBroker(t, `^roots applied`, 0)
	for i := range 3 {
		dir := t.TempDir()
		got := callText(t, b, req("slow", dir), "root", `{}`)
		if !strings.HasSuffix(got, dir) {
			t.Errorf("first call %d from %s: root %q, want the directory", i, dir, got)
		}
	}
}

// A readiness signal that never comes fails the start at startTimeout,
// naming ready.stderr, and the child is gone before the caller has the
// error.
func TestReadyStderrNeverSeen(t *testing.T) {
	b := startSlowRootsBroker(t, `^never printed`, 2*slowRootsDelay)
	_, err := b.CallTool(t.Context(), req("slow", t.TempDir()), "root", json.RawMessage(`{}`), nil)
	be, ok := err.(*broker.Error)
	if !ok || be.Kind != broker.KindTimeout || !strings.Contains(err.Error()+be.Private, "ready.stderr") {
		t.Fatalf("call with a readiness signal never seen: %v, want a start timeout naming ready.stderr", err)
	}
	if left := proctest.Marked(t); len(left) != 0 {
		t.Errorf("the child of the failed start is still there when its caller has the error: %v", left)
	}
}
