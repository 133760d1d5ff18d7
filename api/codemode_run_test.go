package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// Code mode's run: its bounds (mcp.runTimeout, mcp.maxOutput, the MCP
// request's cancellation), its runtimes, and the logs it answers; and
// search's budget.

// runAnswer is a run's result: its text and structured content.
type runAnswer struct {
	text       string
	isError    bool
	structured struct {
		Value    json.RawMessage `json:"value"`
		ExitCode int             `json:"exitCode"`
		Logs     string          `json:"logs"`
		Stdout   string          `json:"stdout"`
	}
}

// runAt calls run with ctx, which bounds a run that would otherwise hang
// the test (it asserts nothing about how long the run takes).
func runAt(t *testing.T, cs *mcp.ClientSession, code string) runAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatalf("run %q: %v", code, err)
	}
	a := runAnswer{isError: res.IsError}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			a.text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &a.structured); err != nil {
			t.Fatalf("run's structured content %s: %v", b, err)
		}
	}
	return a
}

// setCodeMode serves cfg with its mcp block changed by set.
func setCodeMode(d *apitest.Daemon, cfg *config.Config, set func(*config.MCP)) {
	c := *cfg
	set(&c.MCP)
	d.Broker.SetConfig(&c)
}

// procStart is the start time of the process pid (field 22 of
// /proc/PID/stat), "" when there is none: with the pid it tells the
// process from a later one given the same pid. A zombie is still there.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// pidIn is the pid the snippet wrote to file, 0 until it has.
func pidIn(file string) int {
	b, _ := os.ReadFile(file)
	pid, _ := strconv.Atoi(string(b))
	return pid
}

// TestMCPCodeModeRunTimeout: a snippet that never ends is stopped at
// mcp.runTimeout, its result says so, and its process is gone; a run
// whose time is up before its snippet runs says so too.
func TestMCPCodeModeRunTimeout(t *testing.T) {
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`})
	d, root := startCodeDaemonWith(t, cfg)
	cs := codeClient(t, d, apitest.Token, "code", root)
	setCodeMode(d, cfg, func(m *config.MCP) { m.RunTimeout = config.Duration(time.Nanosecond) })
	if a := runAt(t, cs, "return 1"); !a.isError || !strings.Contains(a.text, "[mcpx: the run was stopped after 1ns (mcp.runTimeout)]") {
		t.Errorf("a run out of time before it started answered %q (error %v)", a.text, a.isError)
	}
	// The timeout bounds the whole run, the client and the bundle
	// included: on a loaded machine a short one may end the run before
	// the snippet runs, so it grows until the snippet has run.
	for timeout := 2 * time.Second; ; timeout *= 4 {
		setCodeMode(d, cfg, func(m *config.MCP) { m.RunTimeout = config.Duration(timeout) })
		pidFile := filepath.Join(t.TempDir(), "pid")
		a := runAt(t, cs, `Deno.writeTextFileSync(`+jsString(pidFile)+`, String(Deno.pid)); while (true) {}`)
		want := fmt.Sprintf("[mcpx: the run was stopped after %s (mcp.runTimeout)]", timeout)
		if !a.isError || !strings.Contains(a.text, want) {
			t.Fatalf("a run past its timeout of %s answered %q (error %v), want it to say %s", timeout, a.text, a.isError, want)
		}
		if pid := pidIn(pidFile); pid > 0 {
			if !strings.Contains(a.structured.Logs, want) {
				t.Errorf("the run's logs %q do not say it was stopped", a.structured.Logs)
			}
			if procStart(pid) != "" {
				t.Errorf("the script %d is still there after its run answered", pid)
			}
			return
		}
		if timeout > 2*time.Minute {
			t.Fatalf("the snippet never ran within its timeout of %s", timeout)
		}
	}
}

// TestMCPCodeModeRunOutput: a snippet printing far more than mcp.maxOutput
// on stdout and on stderr gets each bounded, saying how much was dropped.
func TestMCPCodeModeRunOutput(t *testing.T) {
	const maxOutput = 1000
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`})
	cfg.MCP.MaxOutput = maxOutput
	d, root := startCodeDaemonWith(t, cfg)
	cs := codeClient(t, d, apitest.Token, "code", root)
	a := runAt(t, cs, `for (let i = 0; i < 1000; i++) { console.log("o".repeat(1000)); console.error("e".repeat(1000)); }`)
	const marker = "more bytes dropped: the output is bounded at 1000]"
	for what, got := range map[string]string{"text": a.text, "stdout": a.structured.Stdout, "logs": a.structured.Logs} {
		if !strings.Contains(got, marker) {
			t.Errorf("the run's %s does not say it was cut: …%s", what, got[max(len(got)-200, 0):])
		}
		if len(got) > maxOutput+200 {
			t.Errorf("the run's %s is %d bytes, over mcp.maxOutput %d", what, len(got), maxOutput)
		}
	}
	if !strings.HasPrefix(a.text, strings.Repeat("o", maxOutput)) || a.isError {
		t.Errorf("the run answered %.80q… (error %v), want its stdout's first %d bytes", a.text, a.isError, maxOutput)
	}
}

// TestMCPCodeModeRunCancelled: cancelling the MCP request (go-sdk sends
// notifications/cancelled) ends the script's process, and the session
// goes on serving, in either era.
func TestMCPCodeModeRunCancelled(t *testing.T) {
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`})
	cfg.MCP.RunTimeout = config.Duration(time.Hour) // only the cancellation ends the run
	d, root := startCodeDaemonWith(t, cfg)
	for era, version := range map[string]string{"handshake": "2025-11-25", "stateless": ""} {
		t.Run(era, func(t *testing.T) {
			cs := codeClientOver(t, d, apitest.Bearer{Token: apitest.Token}, "code", root, version)
			pidFile := filepath.Join(t.TempDir(), "pid")
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{
					"code": `Deno.writeTextFileSync(` + jsString(pidFile) + `, String(Deno.pid)); await new Promise((r) => setTimeout(r, 3_600_000))`}})
				done <- err
			}()
			testenv.WaitFor(t, "the snippet to run", func() bool { return pidIn(pidFile) > 0 })
			pid := pidIn(pidFile)
			started := procStart(pid)
			if started == "" {
				t.Fatalf("the script %d is gone before the call was cancelled", pid)
			}
			cancel()
			if err := <-done; err == nil {
				t.Error("the cancelled call answered")
			}
			testenv.WaitFor(t, "the cancelled run's script to end", func() bool { return procStart(pid) != started })
			if text, isErr := runCode(t, cs, "return 1 + 1"); isErr || text != "2" {
				t.Errorf("a run after the cancelled one answered %q (error %v)", text, isErr)
			}
		})
	}
}

// TestMCPCodeModeRuntimes: the owner's run works on bun and node too
// (deno is every other test's), with the demo server's answer and its
// records enriched.
func TestMCPCodeModeRuntimes(t *testing.T) {
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`})
	d, root := startCodeDaemonWith(t, cfg)
	cs := codeClient(t, d, apitest.Token, "code", root)
	for name, bin := range map[string]string{"bun": testenv.NPMPackageBinNamed(t, "bun", "bun"), "node": testenv.Node(t)} {
		setCodeMode(d, cfg, func(m *config.MCP) { m.Runtime = bin })
		a := runAt(t, cs, `const on = typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";
log.info("on {rt}", {rt: on});
return {on, ...(await demo.add({a: 2, b: 3})).structuredContent}`)
		var got struct {
			On  string
			Sum int
		}
		if err := json.Unmarshal(a.structured.Value, &got); a.isError || err != nil || got.On != name || got.Sum != 5 {
			t.Errorf("the owner's run on %s: %q (error %v), want the demo's sum 5 on %[1]s", name, a.text, a.isError)
		}
		if !strings.Contains(a.structured.Logs, `"msg":"on `+name+`"`) || !strings.Contains(a.structured.Logs, `"tool":"run"`) {
			t.Errorf("the owner's run on %s logged %q", name, a.structured.Logs)
		}
	}
}

// sessions sends Mcpx-Session and Mcpx-Parent-Session with every request.
type sessions struct {
	token, session, parent string
}

func (s sessions) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.token)
	r.Header.Set(wire.HeaderSession, s.session)
	r.Header.Set(wire.HeaderParentSession, s.parent)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPCodeModeRunLogs: a run's log records come back in logs, each
// enriched by the daemon with what the script did not have to say: the
// caller's session and parent session, the tool call the run is (run on
// mcpx), the script's pid and cwd, mcpx's version and the time since the
// script started; a field the record has is its own.
func TestMCPCodeModeRunLogs(t *testing.T) {
	d, root := startCodeDaemon(t)
	cs := codeClientOver(t, d, sessions{apitest.Token, "task-3", "agent-7"}, "code", root, "")
	a := runAt(t, cs, `log.info("n is {n}", {n: 2}); log.warn("mine", {tool: "own"}); return Deno.pid`)
	if a.isError {
		t.Fatalf("run: %s", a.text)
	}
	lines := strings.Split(a.structured.Logs, "\n")
	if len(lines) != 2 {
		t.Fatalf("the run's logs are %q, want its two records", a.structured.Logs)
	}
	var rec struct {
		Level, Msg, Template                      string
		N                                         *int
		Session, ParentSession, Server, Tool, Cwd string
		Pid                                       json.RawMessage
		ElapsedMs                                 *int64
		ScopeKey                                  *string
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("%v: %s", err, lines[0])
	}
	var version struct {
		V string `json:"mcpxVersion"`
	}
	json.Unmarshal([]byte(lines[0]), &version)
	if rec.Level != "info" || rec.Msg != "n is 2" || rec.Template != "n is {n}" || rec.N == nil || *rec.N != 2 {
		t.Errorf("the record as the script wrote it: %s", lines[0])
	}
	if rec.Session != "task-3" || rec.ParentSession != "agent-7" || rec.Server != "mcpx" || rec.Tool != "run" ||
		string(rec.Pid) != string(a.structured.Value) || rec.Cwd != root || version.V != "test" || rec.ElapsedMs == nil || *rec.ElapsedMs < 0 {
		t.Errorf("the record as the daemon enriched it (pid %s, cwd %s):\n%s", a.structured.Value, root, lines[0])
	}
	if rec.ScopeKey != nil {
		t.Errorf("the record names a scope key: %s", lines[0])
	}
	if !strings.Contains(lines[1], `"msg":"mine"`) || !strings.Contains(lines[1], `"tool":"own"`) || strings.Contains(lines[1], `"tool":"run"`) {
		t.Errorf("a record's own tool field was overwritten: %s", lines[1])
	}

	// A client of the handshake era that names no session has its MCP
	// session's.
	hs := codeClientOver(t, d, apitest.Bearer{Token: apitest.Token}, "code", root, "2025-11-25")
	if a := runAt(t, hs, `log.info("hi")`); !strings.Contains(a.structured.Logs, `"session":"mcp-`+hs.ID()+`"`) || hs.ID() == "" {
		t.Errorf("a run in MCP session %q logged %q", hs.ID(), a.structured.Logs)
	}
}

// TestMCPCodeModeSearchBudget: search answers within its token budget
// (four characters each), fewer matches for a smaller one, and at least
// one whatever the budget.
func TestMCPCodeModeSearchBudget(t *testing.T) {
	d, root := startCodeDaemon(t)
	cs := codeClient(t, d, apitest.Token, "code", root)
	search := func(args map[string]any) (string, int) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("search %v: %v %+v", args, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var sc struct {
			Matches []json.RawMessage `json:"matches"`
		}
		json.Unmarshal(b, &sc)
		text := res.Content[0].(*mcp.TextContent).Text
		_, body, _ := strings.Cut(text, "\n\n")
		return body, len(sc.Matches)
	}
	all, n := search(map[string]any{"budget": 100000, "limit": 100})
	if len(all) <= 400 || n < 3 {
		t.Fatalf("the whole catalog is %d matches in %d characters: too small to bound", n, len(all))
	}
	small, m := search(map[string]any{"budget": 100, "limit": 100})
	if m == 0 || m >= n || (len(small)+3)/4 > 100 {
		t.Errorf("search within 100 tokens answered %d of %d matches in %d characters:\n%s", m, n, len(small), small)
	}
	// Below the schema's minimum is the minimum: never nothing.
	lowBody, low := search(map[string]any{"query": "add", "budget": 1})
	minBody, atMin := search(map[string]any{"query": "add", "budget": 100})
	if low == 0 || low != atMin || lowBody != minBody {
		t.Errorf("search within 1 token answered %d matches, within 100 %d; want the same, at least one", low, atMin)
	}
}
