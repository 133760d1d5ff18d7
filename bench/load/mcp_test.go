package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// authRecorder wraps h, remembering each request's method and
// Authorization header.
type authRecorder struct {
	h    http.Handler
	mu   sync.Mutex
	seen map[string]string // method -> Authorization
}

func (a *authRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.seen[r.Method] = r.Header.Get("Authorization")
	a.mu.Unlock()
	a.h.ServeHTTP(w, r)
}

// hubLike is a go-sdk server that names its tools as mcp-hub does.
func hubLike() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hub-like", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "a__add"}, floorEcho)
	mcp.AddTool(srv, &mcp.Tool{Name: "a__echo"}, floorEcho)
	return srv
}

// The MCP paths' sessions work over both transports, find the tool by its
// name or its aggregated suffix, send the target's headers on every
// request, and make concurrent checked calls.
func TestMCPSessions(t *testing.T) {
	for _, tt := range []struct {
		name, version, tool string
		sse                 bool
		handler             http.Handler
	}{
		{"streamable, handshake era", "2025-11-25", "echo", false, floorHandler()},
		{"streamable, stateless first", "2026-07-28", "echo", false, floorHandler()},
		{"legacy SSE, aggregated name", "2025-11-25", "echo", true,
			mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return hubLike() }, nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &authRecorder{h: tt.handler, seen: map[string]string{}}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tgt := &mcpTarget{url: srv.URL, sse: tt.sse, tool: tt.tool, args: echoArgs, want: "hi",
				version: tt.version, header: map[string]string{"Authorization": "Bearer t0k"}}
			ms, err := openSessions(ctx, tgt, 3)
			if err != nil {
				t.Fatal(err)
			}
			defer ms.close()
			if want := map[bool]string{false: "echo", true: "a__echo"}[tt.sse]; ms.name != want {
				t.Errorf("tool %q, want %q", ms.name, want)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 30)
			for range 6 {
				wg.Go(func() {
					for range 5 {
						errs <- ms.call(ctx)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.seen["POST"] != "Bearer t0k" || (tt.sse && rec.seen["GET"] != "Bearer t0k") {
				t.Errorf("Authorization seen: %v", rec.seen)
			}
		})
	}
}

// A call whose result is not what the target wants fails.
func TestMCPCallChecksResult(t *testing.T) {
	srv := httptest.NewServer(floorHandler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ms, err := openSessions(ctx, &mcpTarget{url: srv.URL, tool: "echo", args: echoArgs, want: "bye", version: "2025-11-25"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.close()
	if err := ms.call(ctx); err == nil || !strings.Contains(err.Error(), "unexpected result") {
		t.Errorf("call = %v, want an unexpected result", err)
	}
	if _, err := openSessions(ctx, &mcpTarget{url: srv.URL, tool: "nope", args: echoArgs, version: "2025-11-25"}, 1); err == nil ||
		!strings.Contains(err.Error(), `no tool "nope"`) {
		t.Errorf("openSessions for a missing tool = %v", err)
	}
}

// A legacy SSE endpoint that never names its POST URL is refused within the
// handshake's bound.
func TestLegacySSENoEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := dialLegacySSE(ctx, srv.URL, nil, newClient(nil)); err == nil || !strings.Contains(err.Error(), "not endpoint") {
		t.Errorf("dial = %v, want a missing endpoint event", err)
	}
}

func TestSessionMemory(t *testing.T) {
	srv := httptest.NewServer(floorHandler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tgt := &mcpTarget{url: srv.URL, tool: "echo", args: echoArgs, version: "2025-11-25"}
	m, idle, err := measureSessionMemory(ctx, "F", tgt, os.Getpid(), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.close()
	if len(idle.all) != 5 {
		t.Errorf("%d idle sessions, want 5", len(idle.all))
	}
	if m.Sessions != 5 || m.BeforeKB <= 0 || m.AfterKB <= 0 || m.Path != "F" {
		t.Errorf("session memory %+v", m)
	}
	if _, _, err := measureSessionMemory(ctx, "F", tgt, 0, 5); err == nil {
		t.Error("no pid: want an error")
	}
}

// The issue-20 checks are within-round ratios with the targets.
func TestMCPChecks(t *testing.T) {
	r := &results{Options: optionsDoc{Rounds: 1, C: []int{1, 32}, Paths: []string{"T", "M", "F", "G"}}}
	add := func(path string, c int, p50, cps float64) {
		r.Cells = append(r.Cells, cell{Path: path, C: c, Round: 1, P50us: p50, CallsPerSec: cps})
	}
	add("T", 1, 500, 0)
	add("M", 1, 550, 0)
	add("G", 1, 2000, 0)
	add("M", 32, 0, 9000)
	add("F", 32, 0, 10000)
	add("G", 32, 0, 2000)
	r.Sessions = []sessionMemory{{Path: "M", Sessions: 10, BeforeKB: 1000, AfterKB: 1100, PerSessionKB: 10}}
	r.mcpChecks()
	want := map[string]struct {
		value float64
		met   string // "yes", "no", "" = informational
	}{
		"M / T p50, c=1 (/mcp vs REST on the same listener)":            {1.1, "yes"},
		"M / F calls/s, c=32 (share of the one-hop floor)":              {0.9, "yes"},
		"M / G calls/s, c=32 (vs mcp-hub)":                              {4.5, "no"},
		"G / M p50, c=1 (how many times faster than mcp-hub)":           {2000.0 / 550, "no"},
		"F / G calls/s, c=32 (the floor vs mcp-hub)":                    {5, ""},
		"M server RSS per idle MCP session (10 sessions, 1.0 → 1.1 MB)": {10, ""},
	}
	got := map[string]check{}
	for _, c := range r.Checks {
		got[c.Name] = c
	}
	for name, w := range want {
		c, ok := got[name]
		if !ok {
			t.Errorf("no check %q (have %v)", name, got)
			continue
		}
		met := ""
		if c.Met != nil {
			met = map[bool]string{true: "yes", false: "no"}[*c.Met]
		}
		if d := c.Value - w.value; d > 1e-9 || d < -1e-9 || met != w.met {
			t.Errorf("%s = %v (met %q), want %v (met %q)", name, c.Value, met, w.value, w.met)
		}
	}
	if _, ok := got["M1 / T p50, c=1 (/mcp/demo vs REST)"]; ok {
		t.Error("a check of a path that was not measured")
	}
}

func TestParseMCPOptions(t *testing.T) {
	o, err := parseOptions([]string{"-paths", "X", "-url", "http://127.0.0.1:1/mcp", "-header", "authorization: Bearer x",
		"-header", "Mcpx-Cwd:/tmp", "-args", `{"a":1}`}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.header["Authorization"] != "Bearer x" || o.header["Mcpx-Cwd"] != "/tmp" || string(o.args) != `{"a":1}` {
		t.Errorf("header %v, args %s", o.header, o.args)
	}
	for _, bad := range [][]string{
		{"-paths", "X"},
		{"-paths", "X", "-url", "u", "-args", "{"},
		{"-paths", "X", "-url", "u", "-header", "no colon"},
	} {
		if _, err := parseOptions(bad, io.Discard); err == nil {
			t.Errorf("parseOptions(%q): want an error", bad)
		}
	}
}
