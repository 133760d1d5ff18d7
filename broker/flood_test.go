package broker_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// envFlood makes this test binary, re-exec'd, a minimal MCP server that
// answers with an endless line: "call" when tools/call of "flood" is
// made, "init" when asked to initialize. The line is floodBytes with no
// newline; the child then goes on answering, its answers appended to the
// unterminated line, as a child that lost its framing would.
//
// The attack run's children write and then go silent instead, their line
// never ended: "garbage" answers the flood call with bytes that are no
// JSON (a python child writing `a`s, then sleeping), "garbage-init" does
// so instead of answering initialize, and "idlast" begins an answer with
// its id left for the end (the TypeScript SDK's order) and never gets
// there. They write slowly, a chunk at a time, and then sleep until
// killed.
const envFlood = "MCPX_TEST_FLOOD"

// envFloodPid names a file the flood child writes its pid to.
const envFloodPid = "MCPX_TEST_FLOOD_PID"

const floodBytes = 24 << 20

// fakeMsg is what the fake children here read of a message from mcpx.
type fakeMsg struct {
	ID     json.RawMessage
	Method string
	Params struct {
		Name            string
		ProtocolVersion string
	}
	Result struct {
		Roots []struct{ URI string }
	}
}

func maybeFlood() {
	mode := os.Getenv(envFlood)
	if mode == "" {
		return
	}
	if f := os.Getenv(envFloodPid); f != "" {
		os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	answer := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		out.Flush()
	}
	flood := func(id json.RawMessage) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
		chunk := strings.Repeat("a", 64<<10)
		for range floodBytes / len(chunk) {
			out.WriteString(chunk)
		}
		out.Flush()
	}
	// trickle writes prefix, then floodBytes of `a` a chunk at a time,
	// and sleeps: the line never ends.
	trickle := func(prefix string) {
		out.WriteString(prefix)
		chunk := strings.Repeat("a", 64<<10)
		for range floodBytes / len(chunk) {
			out.WriteString(chunk)
			out.Flush()
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Hour)
	}
	for in.Scan() {
		var m fakeMsg
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		switch {
		case m.Method == "initialize" && mode == "init":
			for { // endless: only a signal stops it
				flood(m.ID)
			}
		case m.Method == "initialize" && mode == "garbage-init":
			trickle("")
		case m.Method == "tools/call" && m.Params.Name == "flood" && mode == "garbage":
			trickle("")
		case m.Method == "tools/call" && m.Params.Name == "flood" && mode == "idlast":
			trickle(`{"result":{"content":[{"type":"text","text":"`)
		case m.Method == "initialize":
			answer(m.ID, fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"0"}}`, m.Params.ProtocolVersion))
		case m.Method == "tools/list":
			answer(m.ID, `{"tools":[{"name":"flood","inputSchema":{"type":"object"}},{"name":"pid","inputSchema":{"type":"object"}}]}`)
		case m.Method == "tools/call" && m.Params.Name == "flood":
			flood(m.ID)
		case m.Method == "tools/call":
			answer(m.ID, fmt.Sprintf(`{"content":[{"type":"text","text":"%d"}]}`, os.Getpid()))
		default:
			answer(m.ID, `{}`)
		}
	}
	os.Exit(0)
}

// startFloodBroker serves the flood child of mode as "flood", global, with
// limits.maxMessageBytes at limit.
func startFloodBroker(t *testing.T, mode string, limit int) *broker.Broker {
	return startDemoBroker(t, demoSetup{
		scopes: map[string]config.ScopeKind{"flood": config.ScopeGlobal},
		server: func(s *config.Server) {
			delete(s.Env, demo.EnvServer)
			s.Env[envFlood] = mode
			s.CallTimeout = config.Duration(5 * time.Second)
		},
		config: func(c *config.Config) { c.Limits.MaxMessageBytes = limit },
	})
}

// An endless line (no newline, the id in its first bytes) fails its call
// as soon as it crosses limits.maxMessageBytes, with a 502 naming the
// limit; the rest is discarded without being held, and the instance is
// replaced: the stream cannot resynchronise within a line that may never
// end. The daemon's memory does not grow with the line.
func TestEndlessLineFailsItsCallAndReplacesTheChild(t *testing.T) {
	const limit = 1 << 20
	b := startFloodBroker(t, "call", limit)
	r := req("flood", "")
	pid := callText(t, b, r, "pid", `{}`)

	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := b.CallTool(t.Context(), r, "flood", json.RawMessage(`{}`), nil)
	var be *broker.Error
	if !errors.As(err, &be) || be.Kind != broker.KindChildFailed {
		t.Fatalf("flood over the limit: %v, want child-failed (502)", err)
	}
	if !strings.Contains(err.Error(), "limits.maxMessageBytes") || !strings.Contains(err.Error(), strconv.Itoa(limit)) {
		t.Errorf("error %q does not name limits.maxMessageBytes and its value", err)
	}
	// Later calls run on a new child.
	if got := callText(t, b, r, "pid", `{}`); got == pid {
		t.Errorf("the call after the endless line ran on the same child (pid %s); want it replaced", pid)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MiB line over a %d MiB limit: %.1f MiB allocated", floodBytes>>20, limit>>20, float64(allocated)/(1<<20))
	// The limit's worth of buffer and a few spare: a ratio of the limit,
	// never of the line (24 times the limit here).
	if allocated > 6*limit {
		t.Errorf("allocated %d bytes for a %d-byte line over a %d-byte limit", allocated, floodBytes, limit)
	}
}

// A child that answers initialize with a line over the limit fails its
// start with the limit named, and is stopped (it writes on and on and
// never reads its stdin again: only a signal ends it).
func TestOversizedInitializeStopsTheChild(t *testing.T) {
	const limit = 1 << 20
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := startDemoBroker(t, demoSetup{
		scopes: map[string]config.ScopeKind{"flood": config.ScopeGlobal},
		server: func(s *config.Server) {
			delete(s.Env, demo.EnvServer)
			s.Env[envFlood] = "init"
			s.Env[envFloodPid] = pidFile
		},
		config: func(c *config.Config) { c.Limits.MaxMessageBytes = limit },
	})
	_, err := b.CallTool(t.Context(), req("flood", ""), "pid", json.RawMessage(`{}`), nil)
	if err == nil || !strings.Contains(err.Error(), "limits.maxMessageBytes") {
		t.Fatalf("call to a child answering initialize with an endless line: %v, want a start failure naming limits.maxMessageBytes", err)
	}
	// The failed start stops its child before it answers its callers.
	pid, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(pidFile)))))
	if !gone(pid) {
		t.Errorf("the child (pid %d) of the start that failed is still there", pid)
	}
}

// The attack run's endless lines, each from a child that writes slowly
// past limits.maxMessageBytes and then goes silent, its line never ended
// (envFlood): the call fails with a 502 naming the limit as the line
// crosses it — not a 504 at callTimeout, which is the only other way the
// call could end — and so does a bystander's call on the same child; the
// daemon reads no more than a ratio of the limit, whatever the child
// writes; the next call is served by a fresh child.
func TestUnendedLineFailsAtTheLimit(t *testing.T) {
	const limit = 1 << 20
	for _, mode := range []string{"garbage", "idlast"} {
		t.Run(mode, func(t *testing.T) {
			b := startFloodBroker(t, mode, limit)
			r := req("flood", "")
			pid := callText(t, b, r, "pid", `{}`)

			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			bystander := make(chan error, 1)
			go func() {
				// Answered before the flood, or failed by it.
				_, err := b.CallTool(t.Context(), r, "pid", json.RawMessage(`{}`), nil)
				bystander <- err
			}()
			_, err := b.CallTool(t.Context(), r, "flood", json.RawMessage(`{}`), nil)
			var be *broker.Error
			if !errors.As(err, &be) || be.Kind != broker.KindChildFailed {
				t.Fatalf("an unended line over the limit: %v, want child-failed (502), not a timeout", err)
			}
			if !strings.Contains(err.Error(), "limits.maxMessageBytes") || !strings.Contains(err.Error(), strconv.Itoa(limit)) {
				t.Errorf("error %q does not name limits.maxMessageBytes and its value", err)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("a line of up to %d MiB over a %d MiB limit: %.1f MiB allocated", floodBytes>>20, limit>>20, float64(allocated)/(1<<20))
			if allocated > 6*limit {
				t.Errorf("allocated %d bytes for a line over a %d-byte limit", allocated, limit)
			}
			if err := <-bystander; err != nil {
				if !errors.As(err, &be) || be.Kind != broker.KindChildFailed || !strings.Contains(err.Error(), "limits.maxMessageBytes") {
					t.Errorf("bystander: %v, want nothing or child-failed naming the limit", err)
				}
			}
			if got := callText(t, b, r, "pid", `{}`); got == pid {
				t.Errorf("the call after the unended line ran on the same child (pid %s); want a fresh one", pid)
			}
		})
	}
}

// A child that writes an unended line past the limit instead of answering
// initialize fails its start naming the limit — not a timeout at
// startTimeout — and is gone before the caller has the error.
func TestUnendedLineInsteadOfInitialize(t *testing.T) {
	const limit = 1 << 20
	b := startDemoBroker(t, demoSetup{
		scopes: map[string]config.ScopeKind{"flood": config.ScopeGlobal},
		server: func(s *config.Server) {
			delete(s.Env, demo.EnvServer)
			s.Env[envFlood] = "garbage-init"
			s.StartTimeout = config.Duration(20 * time.Second) // what a timeout would look like
		},
		config: func(c *config.Config) { c.Limits.MaxMessageBytes = limit },
	})
	_, err := b.CallTool(t.Context(), req("flood", ""), "pid", json.RawMessage(`{}`), nil)
	var be *broker.Error
	if !errors.As(err, &be) || be.Kind != broker.KindChildFailed || !strings.Contains(err.Error(), "limits.maxMessageBytes") {
		t.Fatalf("call to a child answering initialize with an unended line: %v, want a start failure (502) naming limits.maxMessageBytes", err)
	}
	if left := proctest.Marked(t); len(left) != 0 {
		t.Errorf("the child of the failed start is still there when its caller has the error: %v", left)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// gone reports whether pid is no more (a zombie still counts as there).
func gone(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err != nil
}
