//lint:file-ignore SA1019 roots and logging are what the MCP endpoint passes between its clients and children of the handshake era; the 2026-07-28 revision deprecates them with a twelve-month window.

package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/api"
	mcpserver "mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/mcptest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The MCP endpoint through the official go-sdk client, on loopback TCP with
// the daemon's token, against real demo children.

func worktreePair(t *testing.T) []string {
	dir := t.TempDir()
	return testenv.Worktrees(t, filepath.Join(dir, "repo"), map[string]string{"README": "x"}, "wt1")
}

func TestMCPAggregateGivesEachWorktreeItsChild(t *testing.T) {
	wts := worktreePair(t)
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "worktree"}`, "other": `{"scope": "global"}`})
	for _, era := range []string{"", "2025-06-18"} {
		t.Run("era "+era, func(t *testing.T) {
			_, a := d.ConnectMCP(t, "/mcp", era, nil, wts[0])
			_, b := d.ConnectMCP(t, "/mcp", era, nil, wts[1])
			tools, err := a.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, tl := range tools.Tools {
				names[tl.Name] = true
				if !strings.HasPrefix(tl.Description, "[demo]") && !strings.HasPrefix(tl.Description, "[other]") {
					t.Errorf("tool %s: description %q does not name its server", tl.Name, tl.Description)
				}
			}
			for _, want := range []string{"demo__cwd", "demo__echo", "other__cwd"} {
				if !names[want] {
					t.Fatalf("tools/list lacks %s: %v", want, names)
				}
			}
			if got := apitest.CallText(t, a, &mcp.CallToolParams{Name: "demo__cwd"}); got != wts[0] {
				t.Errorf("client in %s: demo__cwd = %q", wts[0], got)
			}
			if got := apitest.CallText(t, b, &mcp.CallToolParams{Name: "demo__cwd"}); got != wts[1] {
				t.Errorf("client in %s: demo__cwd = %q", wts[1], got)
			}
			pa := apitest.CallText(t, a, &mcp.CallToolParams{Name: "demo__pid"})
			pb := apitest.CallText(t, b, &mcp.CallToolParams{Name: "demo__pid"})
			if pa == pb {
				t.Errorf("two worktrees share the child %s", pa)
			}
			oa := apitest.CallText(t, a, &mcp.CallToolParams{Name: "other__pid"})
			ob := apitest.CallText(t, b, &mcp.CallToolParams{Name: "other__pid"})
			if oa != ob {
				t.Errorf("a global server has two children: %s, %s", oa, ob)
			}
			if _, err := a.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope__cwd"}); err == nil {
				t.Error("a tool of no server was called")
			}
		})
	}
}

func TestMCPRootsChangedMovesTheNextCall(t *testing.T) {
	wts := worktreePair(t)
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "worktree"}`})
	c, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", nil, wts[0])
	if got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__cwd"}); got != wts[0] {
		t.Fatalf("demo__cwd = %q, want %s", got, wts[0])
	}
	c.RemoveRoots("file://" + wts[0])
	c.AddRoots(&mcp.Root{URI: "file://" + wts[1]})
	// The notification is sent asynchronously; the next call after it is
	// seen lands in the new worktree.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__cwd"})
		if got == wts[1] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after roots/list_changed, demo__cwd = %q, want %s", got, wts[1])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMCPProgressCancelAndElicitation(t *testing.T) {
	wts := worktreePair(t)
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "worktree"}`})
	var progress atomic.Int32
	var asked atomic.Int32
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	}
	_, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", opts, wts[0])

	p := &mcp.CallToolParams{Name: "demo__progress", Arguments: map[string]any{"steps": 3, "delayMs": 1}}
	p.SetProgressToken("tok-1")
	if got := apitest.CallText(t, cs, p); got != "done 3" {
		t.Errorf("progress = %q", got)
	}
	// The client runs its notification handlers on their own goroutines.
	waitFor(t, func() bool { return progress.Load() == 3 })

	got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__ask", Arguments: map[string]any{"question": "who?"}})
	if asked.Load() != 1 || !strings.Contains(got, "Ada") {
		t.Errorf("elicitation: asked %d times, result %q", asked.Load(), got)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__sleep", Arguments: map[string]any{"ms": 600000}})
		done <- err
	}()
	waitFor(t, func() bool { return strings.Contains(d.Logs.String(), "sleep") || d.InFlight() > 0 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	waitFor(t, func() bool { return d.InFlight() == 0 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMCPOneServerKeepsItsNames(t *testing.T) {
	wts := worktreePair(t)
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "worktree"}`})
	for _, era := range []string{"", "2025-11-25"} {
		_, cs := d.ConnectMCP(t, "/mcp/demo", era, nil, wts[1])
		if got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); got != "hi" {
			t.Errorf("era %q: echo = %q", era, got)
		}
		prompts, err := cs.ListPrompts(t.Context(), nil)
		if err != nil || len(prompts.Prompts) == 0 {
			t.Fatalf("era %q: prompts %v, %v", era, prompts, err)
		}
		pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
		if err != nil || len(pr.Messages) == 0 {
			t.Fatalf("era %q: greet: %v, %v", era, pr, err)
		}
		res, err := cs.ListResources(t.Context(), nil)
		if err != nil || len(res.Resources) == 0 {
			t.Fatalf("era %q: resources %v, %v", era, res, err)
		}
		rd, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: res.Resources[0].URI})
		if err != nil || len(rd.Contents) == 0 {
			t.Fatalf("era %q: read %s: %v, %v", era, res.Resources[0].URI, rd, err)
		}
	}
}

func TestMCPAggregateRoutesPromptsAndResources(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	_, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", nil)
	pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "demo__greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(pr.Messages) == 0 {
		t.Fatalf("demo__greet: %v, %v", pr, err)
	}
	res, err := cs.ListResources(t.Context(), nil)
	if err != nil || len(res.Resources) == 0 {
		t.Fatalf("resources %v, %v", res, err)
	}
	rd, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: res.Resources[0].URI})
	if err != nil || len(rd.Contents) == 0 {
		t.Fatalf("read %s: %v, %v", res.Resources[0].URI, rd, err)
	}
	b, _ := json.Marshal(rd)
	if !strings.Contains(string(b), res.Resources[0].URI) {
		t.Errorf("read result %s does not carry its URI", b)
	}
}

func TestMCPSessionEndsOnDelete(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "session"}`})
	_, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", nil)
	apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__pid"})
	if n := len(d.Broker.Instances()); n != 1 || d.MCP.Sessions() != 1 {
		t.Fatalf("%d instances, %d sessions; want 1, 1", n, d.MCP.Sessions())
	}
	cs.Close()
	waitFor(t, func() bool { return d.MCP.Sessions() == 0 && len(d.Broker.Instances()) == 0 })
}

func TestMCPStatelessElicitationTakesAnInputRound(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	var asked atomic.Int32
	opts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
	}}
	_, cs := d.ConnectMCP(t, "/mcp", "", opts)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the go-sdk client did not stay stateless: %s", v)
	}
	got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__ask", Arguments: map[string]any{"question": "who?"}})
	if asked.Load() != 1 || !strings.Contains(got, "Grace") {
		t.Errorf("asked %d times, result %q", asked.Load(), got)
	}
}

// TestMCPBrowserGuard: MCP clients send no Mcpx-Client, and need not; a
// foreign Origin is refused, the listener's own is not; a POST that is not
// JSON (what a web page may send without a preflight) is refused.
func TestMCPBrowserGuard(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(headers map[string]string) *http.Response {
		req, _ := http.NewRequest("POST", "http://"+d.TCPAddr+"/mcp", strings.NewReader(init))
		req.Header.Set("Authorization", "Bearer "+apitest.Token)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			if k == "Host" {
				req.Host = v
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"plain", nil, 200},
		{"own origin", map[string]string{"Origin": "http://" + d.TCPAddr}, 200},
		{"node fetch", map[string]string{"Sec-Fetch-Mode": "cors"}, 200},
		{"foreign origin", map[string]string{"Origin": "http://evil.example"}, 403},
		{"rebinding host", map[string]string{"Host": "evil.example"}, 403},
		{"form post", map[string]string{"Content-Type": "text/plain"}, 415},
		{"no token", map[string]string{"Authorization": ""}, 401},
	} {
		if resp := post(tc.headers); resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
}

func TestMCPUnknownServerIs404(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + d.TCPAddr + "/mcp/nope", HTTPClient: &http.Client{Transport: apitest.Bearer{Token: apitest.Token}}, MaxRetries: -1}
	if _, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}); err == nil {
		t.Fatal("connected to a server that does not exist")
	}
}

// TestMCPIdleSessionEnds: a client that stops calling loses its session
// (and its session-scoped children) after the idle time, although its GET
// stream stays open.
func TestMCPIdleSessionEnds(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "session"}`}), MCP: func(o *mcpserver.Options) { o.IdleTimeout = 300 * time.Millisecond }})
	_, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", nil)
	apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__pid"})
	if n := len(d.Broker.Instances()); n != 1 {
		t.Fatalf("%d instances, want 1", n)
	}
	waitFor(t, func() bool { return d.MCP.Sessions() == 0 && len(d.Broker.Instances()) == 0 })
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo__pid"}); err == nil {
		t.Error("a call on an ended session succeeded")
	}
}

// TestMCPTypeScriptSDKClient: the official TypeScript SDK client
// (testdata/npm/clients/mcp-ts-client.mjs) with a root in a git worktree:
// tools, the worktree's child, progress, elicitation, sampling (a server
// allowed it), abort, prompts, resources, templates, roots/list_changed.
func TestMCPTypeScriptSDKClient(t *testing.T) {
	proctest.CheckNoLeaks(t)
	wts := worktreePair(t)
	node := testenv.Node(t)
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "worktree"}`})
	apitest.AddEverything(t, cfg, map[string]any{"sampling": true})
	d := apitest.Start(t, apitest.Options{Config: cfg})
	out := mcptest.RunTSClient(t, node, "http://"+d.TCPAddr+"/mcp", apitest.Token, wts[0], wts[1], "", nil)
	if out.Protocol != "2025-11-25" || !out.Session {
		t.Errorf("protocol %q, session %v", out.Protocol, out.Session)
	}
	out.Check(t, wts[0], wts[1])
	waitFor(t, func() bool { return d.MCP.Sessions() == 0 && d.InFlight() == 0 })
}

// sseEvent is one event of an MCP SSE stream.
type sseEvent struct{ id, data string }

// nextEvent reads one event (comments skipped); false at the end.
func nextEvent(br *bufio.Reader) (sseEvent, bool) {
	var ev sseEvent
	seen := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return ev, false
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && seen:
			return ev, true
		case strings.HasPrefix(line, "id: "):
			ev.id, seen = strings.TrimPrefix(line, "id: "), true
		case strings.HasPrefix(line, "data:"):
			ev.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			seen = true
		}
	}
}

// TestMCPResumeAfterADroppedConnection: a call whose SSE answer loses its
// connection goes on, and a GET with Last-Event-ID gets the rest of it.
func TestMCPResumeAfterADroppedConnection(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	m := d.RawMCP(t)
	ctx, cancel := context.WithCancel(t.Context())
	resp := m.Send(ctx, "POST", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"demo__progress","arguments":{"steps":4,"delayMs":300},"_meta":{"progressToken":"p"}}}`, "")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("a call with progress answered %s", ct)
	}
	br := bufio.NewReader(resp.Body)
	var last string
	for {
		ev, ok := nextEvent(br)
		if !ok {
			t.Fatal("the stream ended before any progress")
		}
		last = ev.id
		if strings.Contains(ev.data, "notifications/progress") {
			break
		}
	}
	cancel()
	resp.Body.Close()

	resp = m.Send(t.Context(), "GET", "", last)
	defer resp.Body.Close()
	br = bufio.NewReader(resp.Body)
	progress := 0
	for {
		ev, ok := nextEvent(br)
		if !ok {
			t.Fatalf("the resumed stream ended without the response (after %d progress)", progress)
		}
		if strings.Contains(ev.data, "notifications/progress") {
			progress++
		}
		if strings.Contains(ev.data, `"id":7`) {
			if !strings.Contains(ev.data, "done 4") {
				t.Errorf("response %s", ev.data)
			}
			break
		}
	}
	if progress == 0 || progress > 3 {
		t.Errorf("%d progress notifications after the resume, want the 1–3 not yet seen", progress)
	}
}

// TestMCPResumeAfterTheCallEnded: a call whose connection dropped and that
// finished before the client came back still answers the resume.
func TestMCPResumeAfterTheCallEnded(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	m := d.RawMCP(t)
	ctx, cancel := context.WithCancel(t.Context())
	resp := m.Send(ctx, "POST", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"demo__progress","arguments":{"steps":2,"delayMs":100},"_meta":{"progressToken":"p"}}}`, "")
	br := bufio.NewReader(resp.Body)
	var last string
	for ev, ok := nextEvent(br); ; ev, ok = nextEvent(br) {
		if !ok {
			t.Fatal("the stream ended before any progress")
		}
		last = ev.id
		if strings.Contains(ev.data, "notifications/progress") {
			break
		}
	}
	cancel()
	resp.Body.Close()
	waitFor(t, func() bool { return d.InFlight() == 0 })

	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp = m.Send(ctx, "GET", "", last)
	defer resp.Body.Close()
	br = bufio.NewReader(resp.Body)
	for ev, ok := nextEvent(br); ; ev, ok = nextEvent(br) {
		if !ok {
			t.Fatal("the resumed stream ended without the response")
		}
		if strings.Contains(ev.data, `"id":9`) {
			if !strings.Contains(ev.data, "done 2") {
				t.Errorf("response %s", ev.data)
			}
			break
		}
	}
}

// TestMCPAbandonedCallIsCancelled: with no resume within the grace, the
// call of a dropped connection is cancelled and the child freed.
func TestMCPAbandonedCallIsCancelled(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}), MCP: func(o *mcpserver.Options) { o.ResumeGrace = 200 * time.Millisecond }})
	m := d.RawMCP(t)
	ctx, cancel := context.WithCancel(t.Context())
	resp := m.Send(ctx, "POST", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"demo__progress","arguments":{"steps":1000,"delayMs":100},"_meta":{"progressToken":"p"}}}`, "")
	br := bufio.NewReader(resp.Body)
	for ev, ok := nextEvent(br); ok && !strings.Contains(ev.data, "progress"); ev, ok = nextEvent(br) {
	}
	if d.InFlight() != 1 {
		t.Fatalf("%d calls in flight, want 1", d.InFlight())
	}
	cancel()
	resp.Body.Close()
	waitFor(t, func() bool { return d.InFlight() == 0 })
}

// TestMCPGetStreamDoesNotHoldTheDrain: an open GET stream is idle, and
// ends when the daemon stops instead of holding the drain to its limit.
func TestMCPGetStreamDoesNotHoldTheDrain(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}), Serve: func(o *api.ServeOptions) { o.DrainTimeout = time.Minute }})
	m := d.RawMCP(t)
	resp := m.Send(t.Context(), "GET", "", "")
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	done := make(chan struct{})
	go func() { d.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the listeners are still draining after 30s: the GET stream holds them")
	}
	if strings.Contains(d.Logs.String(), "draining") {
		t.Errorf("the drain ran out: %s", d.Logs.String())
	}
}

// TestMCPReloadSaysListsChanged: a reload reaches connected clients as
// list_changed, over the GET stream (2025-11-25) and over
// subscriptions/listen (2026-07-28).
func TestMCPReloadSaysListsChanged(t *testing.T) {
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`})
	d := apitest.Start(t, apitest.Options{Config: cfg})
	for _, era := range []string{"2025-11-25", ""} {
		changed := make(chan struct{}, 10)
		opts := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}
		_, cs := d.ConnectMCP(t, "/mcp", era, opts)
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		// The GET stream or the listen request is opened asynchronously:
		// reload until one reload is seen.
		deadline := time.Now().Add(10 * time.Second)
	wait:
		for {
			d.Broker.Reload(cfg, "test")
			select {
			case <-changed:
				break wait
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("era %q: no tools/list_changed after a reload", era)
			}
		}
	}
}

// TestMCPChildLogsReachTheClient: a child's notifications/message reaches
// the session that uses it, its logger prefixed with the server's name.
func TestMCPChildLogsReachTheClient(t *testing.T) {
	proctest.CheckNoLeaks(t)
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`})
	apitest.AddEverything(t, cfg, nil)
	d := apitest.Start(t, apitest.Options{Config: cfg})
	logs := make(chan *mcp.LoggingMessageParams, 100)
	opts := &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params }}
	_, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", opts)
	apitest.CallText(t, cs, &mcp.CallToolParams{Name: "everything__toggle-simulated-logging"})
	timeout := time.After(30 * time.Second)
	for {
		select {
		case p := <-logs:
			if strings.HasPrefix(p.Logger, "everything") {
				return
			}
		case <-timeout:
			t.Fatal("no log message of the child reached the client within 30s")
		}
	}
}

// TestMCPSessionIsBoundToItsPath: a session opened on /mcp/demo is no
// session on /mcp (nor the reverse): the id does not carry a client to
// another path's servers.
func TestMCPSessionIsBoundToItsPath(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	m := d.RawMCP(t) // on /mcp
	m.URL = "http://" + d.TCPAddr + "/mcp/demo"
	resp := m.Send(t.Context(), "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an /mcp session on /mcp/demo: %d, want 404", resp.StatusCode)
	}
}
