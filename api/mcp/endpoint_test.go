//lint:file-ignore SA1019 roots and logging are what the MCP endpoint passes between its clients and children of the handshake era; the 2026-07-28 revision deprecates them with a twelve-month window.

package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/mcptest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The MCP endpoint through the official clients (go-sdk, and the
// TypeScript SDK on node), over package apitest's daemon: loopback TCP with
// the daemon's token, against real demo children and server-everything.

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
	testenv.WaitFor(t, "demo__cwd in "+wts[1]+" after roots/list_changed", func() bool {
		return apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__cwd"}) == wts[1]
	})
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
	testenv.WaitFor(t, "the three progress notifications", func() bool { return progress.Load() == 3 })

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
	testenv.WaitFor(t, "the sleep to start", func() bool { return strings.Contains(d.Logs.String(), "sleep") || d.InFlight() > 0 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	testenv.WaitFor(t, "the cancelled call to end in the child", func() bool { return d.InFlight() == 0 })
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

// TestMCPStatelessEarlyInputResponses: a stateless client that sends a
// call with inputResponses and no requestState gets them used for its
// child's requests under their keys, the other keys ignored, as the child
// itself would (SEP-2322): the call completes in one round.
func TestMCPStatelessEarlyInputResponses(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	post := func(extra string) map[string]json.RawMessage {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__ask","arguments":{"question":"who?"}` + extra +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
		req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://"+d.TCPAddr+"/mcp", strings.NewReader(body))
		for k, v := range map[string]string{"Authorization": "Bearer " + apitest.Token, "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "demo__ask"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Result map[string]json.RawMessage }
		b, _ := io.ReadAll(resp.Body)
		if i := bytes.Index(b, []byte("data: ")); i >= 0 { // an SSE answer
			b = b[i+len("data: "):]
		}
		if err := json.NewDecoder(bytes.NewReader(b)).Decode(&out); err != nil || out.Result == nil {
			t.Fatalf("%d %s: %v", resp.StatusCode, b, err)
		}
		return out.Result
	}
	first := post("")
	var reqs map[string]json.RawMessage
	if json.Unmarshal(first["inputRequests"], &reqs) != nil || len(reqs) != 1 {
		b, _ := json.Marshal(first)
		t.Fatalf("first round: %s, want one input request", b)
	}
	var key string
	for k := range reqs {
		key = k
	}
	got := post(`,"inputResponses":{"` + key + `":{"action":"accept","content":{"name":"Grace"}},"unknown_extra_key":{"action":"decline"}}`)
	if rt := string(got["resultType"]); rt == `"input_required"` || !strings.Contains(string(got["content"]), "Grace") {
		b, _ := json.Marshal(got)
		t.Errorf("a call with the answer sent at once: %s, want it complete with the answer", b)
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
	testenv.WaitFor(t, "the sessions and calls to end", func() bool { return d.MCP.Sessions() == 0 && d.InFlight() == 0 })
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
		testenv.WaitFor(t, fmt.Sprintf("era %q: tools/list_changed after a reload", era), func() bool {
			d.Broker.Reload(cfg, "test")
			select {
			case <-changed:
				return true
			case <-time.After(100 * time.Millisecond):
				return false
			}
		})
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
