//lint:file-ignore SA1019 roots and logging are what the bridge relays between a client and a server of the handshake eras; the 2026-07-28 revision deprecates them with a twelve-month window.
package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/mcp/bridge"
)

// The bridge between go-sdk's client (on the bridge's stdin and stdout)
// and a go-sdk Streamable HTTP server on a loopback listener: real parts
// on both sides.

// endpoint is the HTTP side: a go-sdk StreamableHTTPHandler that a test
// can replace by a fresh one (a daemon restart: every session is lost),
// recording the requests it gets.
type endpoint struct {
	stateless bool
	cancelled chan string    // a slow call's handler saw its context end
	initRoots chan []string  // the roots asked for after initialized (over the GET stream)
	asking    sync.WaitGroup // roots/list asked after initialized, unanswered

	mu       sync.Mutex
	stop     context.CancelFunc // ends the current server's own requests
	handler  http.Handler
	srv      *mcp.Server
	requests []seen
}

// seen is one request the endpoint got.
type seen struct {
	method string
	header http.Header
	rpc    string // the JSON-RPC method of a POST, "" for a response
}

func newEndpoint(stateless bool) *endpoint {
	ep := &endpoint{stateless: stateless, cancelled: make(chan string, 4), initRoots: make(chan []string, 4)}
	ep.restart()
	return ep
}

// restart replaces the handler (and its server) with a new one; the old
// server's requests to the client end.
func (ep *endpoint) restart() {
	ctx, cancel := context.WithCancel(context.Background())
	ep.mu.Lock()
	if ep.stop != nil {
		ep.stop()
	}
	ep.stop = cancel
	ep.mu.Unlock()
	srv := ep.newServer(ctx)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: ep.stateless})
	ep.mu.Lock()
	ep.handler, ep.srv = h, srv
	ep.mu.Unlock()
}

func (ep *endpoint) current() *mcp.Server {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.srv
}

func (ep *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := seen{method: r.Method, header: r.Header.Clone()}
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		var m struct{ Method string }
		json.Unmarshal(body, &m)
		s.rpc = m.Method
		r.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	ep.mu.Lock()
	ep.requests = append(ep.requests, s)
	h := ep.handler
	ep.mu.Unlock()
	h.ServeHTTP(w, r)
}

// got returns the requests so far.
func (ep *endpoint) got() []seen {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return slices.Clone(ep.requests)
}

func (ep *endpoint) count(method string) int {
	n := 0
	for _, s := range ep.got() {
		if s.method == method {
			n++
		}
	}
	return n
}

type textArgs struct {
	Text string `json:"text"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func (ep *endpoint) newServer(life context.Context) *mcp.Server {
	opts := &mcp.ServerOptions{}
	if !ep.stateless {
		// Like mcpx's endpoint: the client's roots are asked for once the
		// session is initialized, outside any request: over the GET stream.
		opts.InitializedHandler = func(_ context.Context, req *mcp.InitializedRequest) {
			ep.asking.Add(1)
			go func() {
				defer ep.asking.Done()
				ctx, cancel := context.WithTimeout(life, 10*time.Second)
				defer cancel()
				res, err := req.Session.ListRoots(ctx, nil)
				if err != nil {
					ep.initRoots <- []string{"error: " + err.Error()}
					return
				}
				ep.initRoots <- rootURIs(res.Roots)
			}()
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "endpoint", Version: "1"}, opts)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		}
		select {
		case <-ctx.Done():
			ep.cancelled <- in.Text
			return nil, nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return text("slept"), nil, nil
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ textArgs) (*mcp.CallToolResult, any, error) {
		if ep.stateless {
			if r, ok := req.Params.InputResponses["q"].(*mcp.ElicitResult); ok {
				return text(fmt.Sprint(r.Action, " ", r.Content["answer"])), nil, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "the answer?", RequestedSchema: answerSchema}}}, nil, nil
		}
		r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "the answer?", RequestedSchema: answerSchema})
		if err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprint(r.Action, " ", r.Content["answer"])), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ textArgs) (*mcp.CallToolResult, any, error) {
		if ep.stateless {
			if r, ok := req.Params.InputResponses["r"].(*mcp.ListRootsResult); ok {
				return text(strings.Join(rootURIs(r.Roots), ",")), nil, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"r": &mcp.ListRootsParams{}}}, nil, nil
		}
		r, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		return text(strings.Join(rootURIs(r.Roots), ",")), nil, nil
	})
	// An argument mapped to a header: in the stateless era the server
	// refuses a call without a matching Mcp-Param-Region (SEP-2243).
	s.AddTool(&mcp.Tool{Name: "region", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"text":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in textArgs
			json.Unmarshal(req.Params.Arguments, &in)
			return text(in.Text), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "log"}, func(ctx context.Context, req *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "endpoint", Data: in.Text})
		return text("logged"), nil, nil
	})
	return s
}

var answerSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)

func rootURIs(roots []*mcp.Root) []string {
	var uris []string
	for _, r := range roots {
		uris = append(uris, r.URI)
	}
	return uris
}

// harness is a bridge between a go-sdk client session and an endpoint.
type harness struct {
	t         *testing.T
	ep        *endpoint
	srv       *httptest.Server // replaced by restart (Options.Restart)
	restarts  atomic.Int32
	closeOnce sync.Once
	cs        *mcp.ClientSession
	served    chan error
	logs      chan *mcp.LoggingMessageParams
	progress  chan *mcp.ProgressNotificationParams
	changed   chan struct{}
}

type setup struct {
	stateless bool
	version   string // the client's protocol version; "" = go-sdk's latest
	roots     []string
	mapPath   func(string) (string, bool)
	header    http.Header
	restart   bool // Options.Restart serves the endpoint again, with its sessions lost
}

func start(t *testing.T, s setup) *harness {
	t.Helper()
	checkNoLeaks(t)
	h := &harness{t: t, ep: newEndpoint(s.stateless), served: make(chan error, 1),
		logs: make(chan *mcp.LoggingMessageParams, 16), progress: make(chan *mcp.ProgressNotificationParams, 16),
		changed: make(chan struct{}, 4)}
	h.srv = httptest.NewServer(h.ep)
	t.Cleanup(func() { h.srv.Close() })

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	opts := bridge.Options{
		Client:  client.New(h.srv.URL, client.Options{Token: "test-token"}),
		Header:  s.header,
		MapPath: s.mapPath,
		Backoff: 10 * time.Millisecond,
		Drain:   2 * time.Second,
		Logger:  slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if s.restart {
		addr := h.srv.Listener.Addr().String()
		opts.Restart = func(context.Context) error {
			h.restarts.Add(1)
			t.Logf("restart")
			h.ep.restart()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv := httptest.NewUnstartedServer(h.ep)
			srv.Listener.Close()
			srv.Listener = ln
			srv.Start()
			h.srv = srv // the old one is closed: only the test's goroutine reads h.srv meanwhile
			return nil
		}
	}
	go func() {
		err := bridge.Serve(context.Background(), stdinR, stdoutW, opts)
		stdoutW.Close()
		h.served <- err
	}()

	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "42 to " + req.Params.Message}}, nil
		},
		LoggingMessageHandler:       func(_ context.Context, req *mcp.LoggingMessageRequest) { h.logs <- req.Params },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { h.progress <- req.Params },
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { h.changed <- struct{}{} },
	})
	for _, r := range s.roots {
		c.AddRoots(&mcp.Root{URI: r})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var so *mcp.ClientSessionOptions
	if s.version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: s.version}
	}
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: stdoutR, Writer: stdinW}, so)
	if err != nil {
		stdinW.Close()
		<-h.served
		t.Fatalf("connecting through the bridge: %v", err)
	}
	h.cs = cs
	t.Cleanup(h.close) // before the server closes, which waits for its requests
	return h
}

// close ends the client session (the bridge's stdin ends) and waits for
// Serve to return; again, it does nothing.
func (h *harness) close() {
	h.t.Helper()
	h.closeOnce.Do(func() {
		// A session's DELETE waits for the server's requests to the
		// client: let the client answer them first.
		asked := make(chan struct{})
		go func() { h.ep.asking.Wait(); close(asked) }()
		select {
		case <-asked:
		case <-time.After(20 * time.Second):
			h.t.Error("the roots/list after initialized was never answered")
		}
		h.cs.Close()
		select {
		case <-h.served:
		case <-time.After(20 * time.Second):
			h.t.Error("Serve did not return after the end of its input")
		}
	})
}

// call calls a tool and returns its text.
func (h *harness) call(ctx context.Context, tool, arg string) (string, error) {
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": arg}})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("tool error: %v", res.Content)
	}
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, ""), nil
}

func (h *harness) mustCall(tool, arg string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 20*time.Second)
	defer cancel()
	s, err := h.call(ctx, tool, arg)
	if err != nil {
		h.t.Fatalf("calling %s: %v", tool, err)
	}
	return s
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("%s never came", what)
		var zero T
		return zero
	}
}

// checkNoLeaks fails the test if a goroutine of the bridge outlives it
// (checked, bounded, after the test's other cleanups).
func checkNoLeaks(t *testing.T) {
	t.Cleanup(func() {
		var stacks string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			buf := make([]byte, 1<<20)
			stacks = string(buf[:runtime.Stack(buf, true)])
			if !strings.Contains(stacks, "mcpx/mcpbridge.") {
				return
			}
		}
		var leaked []string
		for g := range strings.SplitSeq(stacks, "\n\n") {
			if strings.Contains(g, "mcpx/mcpbridge.") {
				leaked = append(leaked, g)
			}
		}
		t.Errorf("goroutines of the bridge outlived it:\n%s", strings.Join(leaked, "\n\n"))
	})
}

func TestSession(t *testing.T) {
	h := start(t, setup{version: "2025-11-25", roots: []string{"file:///src/app"},
		header: http.Header{"Mcpx-Cwd": {"/src/app"}}})

	if got := receive(t, h.ep.initRoots, "roots/list over the GET stream"); !slices.Equal(got, []string{"file:///src/app"}) {
		t.Errorf("the server got the roots %q, want file:///src/app", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	tools, err := h.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"ask", "echo", "log", "region", "roots", "slow"}; !slices.Equal(names, want) {
		t.Errorf("tools/list: %q, want %q", names, want)
	}
	if got := h.mustCall("echo", "hi"); got != "hi" {
		t.Errorf("echo: %q", got)
	}
	if got := h.mustCall("ask", ""); got != "accept 42 to the answer?" {
		t.Errorf("elicitation: the tool got %q", got)
	}
	if got := h.mustCall("roots", ""); got != "file:///src/app" {
		t.Errorf("roots/list in a call: %q", got)
	}
	if err := h.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	h.mustCall("log", "a log line")
	if l := receive(t, h.logs, "the log notification"); l.Data != "a log line" {
		t.Errorf("log notification: %+v", l)
	}

	// A notification outside any request arrives over the GET stream.
	h.ep.current().AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("late"), nil })
	receive(t, h.changed, "notifications/tools/list_changed")

	h.close()
	if n := h.ep.count(http.MethodDelete); n != 1 {
		t.Errorf("%d DELETEs at the end of input, want 1", n)
	}
	checkHeaders(t, h.ep.got())
}

// checkHeaders: every request carries Mcpx-Client and the caller's
// headers; those after initialize the session and version.
func checkHeaders(t *testing.T, reqs []seen) {
	t.Helper()
	for _, r := range reqs {
		if got := r.header.Get("Mcpx-Client"); got != bridge.ClientName {
			t.Errorf("%s %s: Mcpx-Client %q", r.method, r.rpc, got)
		}
		if got := r.header.Get("Mcpx-Cwd"); got != "/src/app" {
			t.Errorf("%s %s: Mcpx-Cwd %q", r.method, r.rpc, got)
		}
		if got := r.header.Get("Authorization"); got != "Bearer test-token" {
			t.Errorf("%s %s: Authorization %q", r.method, r.rpc, got)
		}
		if r.rpc == "initialize" {
			continue
		}
		if r.header.Get("Mcp-Session-Id") == "" || r.header.Get("Mcp-Protocol-Version") != "2025-11-25" {
			t.Errorf("%s %s: session %q, version %q", r.method, r.rpc, r.header.Get("Mcp-Session-Id"), r.header.Get("Mcp-Protocol-Version"))
		}
	}
	if t.Failed() {
		return
	}
	if reqs[0].rpc != "initialize" || reqs[0].header.Get("Content-Type") != "application/json" ||
		reqs[0].header.Get("Accept") != "application/json, text/event-stream" {
		t.Errorf("first request: %s %q, Content-Type %q, Accept %q", reqs[0].method, reqs[0].rpc,
			reqs[0].header.Get("Content-Type"), reqs[0].header.Get("Accept"))
	}
}

// Cancelling the client's call cancels the server's handler: the
// client's notifications/cancelled is relayed while the call is in
// flight, and a later call is not held up by the first.
func TestCancel(t *testing.T) {
	h := start(t, setup{version: "2025-11-25"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"text": "first"},
			Meta: mcp.Meta{"progressToken": "p1"}})
		done <- err
	}()
	p := receive(t, h.progress, "progress")
	if p.ProgressToken != "p1" || p.Progress != 1 || p.Total != 2 || p.Message != "half" {
		t.Errorf("progress: %+v", p)
	}
	// The slow call is in flight: another request is answered meanwhile.
	if got := h.mustCall("echo", "meanwhile"); got != "meanwhile" {
		t.Errorf("echo during a slow call: %q", got)
	}
	cancel()
	if got := receive(t, h.ep.cancelled, "the server's handler cancelled"); got != "first" {
		t.Errorf("cancelled %q", got)
	}
	if err := receive(t, done, "the cancelled call's return"); !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled call returned %v", err)
	}
	if got := h.mustCall("echo", "after"); got != "after" {
		t.Errorf("echo after a cancel: %q", got)
	}
}

// A restarted server has lost the session: the bridge opens a new one
// (the client's initialize and initialized replayed), resends the call,
// and warns the client.
func TestSessionLost(t *testing.T) {
	h := start(t, setup{version: "2025-11-25", roots: []string{"file:///src/app"}})
	receive(t, h.ep.initRoots, "roots/list")
	h.mustCall("echo", "before")
	first := sessionOf(h.ep.got(), "tools/call")

	h.ep.restart()
	h.srv.CloseClientConnections() // the old GET stream ends with the "daemon"
	if got := h.mustCall("echo", "after"); got != "after" {
		t.Errorf("echo after a restart: %q", got)
	}
	l := receive(t, h.logs, "the warning")
	if l.Level != "warning" || l.Logger != "mcpx" || !strings.Contains(fmt.Sprint(l.Data), "lost this MCP session") {
		t.Errorf("warning: %+v", l)
	}
	if second := sessionOf(h.ep.got(), "tools/call"); second == first || second == "" {
		t.Errorf("the call went to session %q again", second)
	}
	// The new session is whole: initialized replayed, so the server asks
	// for roots again over a new GET stream.
	if got := receive(t, h.ep.initRoots, "roots/list in the new session"); !slices.Equal(got, []string{"file:///src/app"}) {
		t.Errorf("the new session got the roots %q", got)
	}
	var inits int
	for _, r := range h.ep.got() {
		if r.rpc == "initialize" {
			inits++
		}
	}
	if inits != 2 {
		t.Errorf("%d initialize requests, want 2 (the client's and its replay)", inits)
	}
}

// A daemon that stopped is started again (Options.Restart, the CLI's
// autostart) and, having lost the session, gets a new one: the call that
// found it gone is answered.
func TestRestart(t *testing.T) {
	h := start(t, setup{version: "2025-11-25", restart: true})
	h.mustCall("echo", "before")
	old := h.srv
	old.CloseClientConnections()
	old.Close()
	if got := h.mustCall("echo", "after"); got != "after" {
		t.Errorf("echo after the server stopped: %q", got)
	}
	if n := h.restarts.Load(); n != 1 {
		t.Errorf("%d restarts, want 1", n)
	}
	if l := receive(t, h.logs, "the warning"); l.Level != "warning" {
		t.Errorf("warning: %+v", l)
	}
}

// sessionOf is the session id of the last POST of the JSON-RPC method.
func sessionOf(reqs []seen, rpc string) string {
	s := ""
	for _, r := range reqs {
		if r.rpc == rpc {
			s = r.header.Get("Mcp-Session-Id")
		}
	}
	return s
}

// Against a broker on another machine the client's roots are mapped to
// the broker's side of the files; one no mapping covers is left out.
func TestRootsMapped(t *testing.T) {
	mapPath := func(p string) (string, bool) {
		rest, ok := strings.CutPrefix(p, "/Users/me/src")
		return "/home/me/src" + rest, ok
	}
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			s := setup{stateless: stateless, version: "2025-11-25", mapPath: mapPath,
				roots: []string{"file:///Users/me/src/app%20one", "file:///elsewhere"}}
			if stateless {
				s.version = ""
			}
			h := start(t, s)
			want := "file:///home/me/src/app%20one"
			if !stateless {
				if got := receive(t, h.ep.initRoots, "roots/list"); !slices.Equal(got, []string{want}) {
					t.Errorf("roots over the GET stream: %q, want %q", got, want)
				}
			}
			if got := h.mustCall("roots", ""); got != want {
				t.Errorf("roots in a call: %q, want %q", got, want)
			}
		})
	}
}

// The stateless era (2026-07-28): server/discover, no initialize, no
// session, no GET stream; each request names its version in _meta and
// the bridge sends it, with the standard headers, on the request.
func TestStateless(t *testing.T) {
	h := start(t, setup{stateless: true, roots: []string{"file:///src/app"}, header: http.Header{"Mcpx-Cwd": {"/src/app"}}})
	if v := h.cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want the stateless era", v)
	}
	if got := h.mustCall("echo", "hi"); got != "hi" {
		t.Errorf("echo: %q", got)
	}
	if got := h.mustCall("ask", ""); got != "accept 42 to the answer?" {
		t.Errorf("elicitation (input_required): %q", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := h.cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := h.mustCall("region", "eu-west"); got != "eu-west" {
		t.Errorf("a call with an argument in a header: %q", got)
	}
	if got := h.mustCall("roots", ""); got != "file:///src/app" {
		t.Errorf("roots (input_required): %q", got)
	}
	h.close()
	reqs := h.ep.got()
	// The bridge holds a caller session for a stateless client: every
	// request carries it as Mcpx-Session, and the last is a DELETE that
	// ends it (no Mcp-Session-Id: there is no MCP session).
	own := ""
	for i, r := range reqs {
		if r.method == http.MethodDelete && i == len(reqs)-1 {
			if got := r.header.Get("Mcpx-Session"); got == "" || got != own || r.header.Get("Mcp-Session-Id") != "" {
				t.Errorf("the closing DELETE: Mcpx-Session %q (want %q), Mcp-Session-Id %q", got, own, r.header.Get("Mcp-Session-Id"))
			}
			continue
		}
		if r.method != http.MethodPost {
			t.Errorf("a %s request in the stateless era", r.method)
			continue
		}
		if got := r.header.Get("Mcpx-Session"); !strings.HasPrefix(got, "bridge-") || own != "" && got != own {
			t.Errorf("%s: Mcpx-Session %q, want the bridge's own, the same on every request", r.rpc, got)
		} else {
			own = got
		}
		if r.rpc == "initialize" || r.header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s with session %q in the stateless era", r.rpc, r.header.Get("Mcp-Session-Id"))
		}
		if r.header.Get("Mcp-Protocol-Version") != "2026-07-28" || r.header.Get("Mcp-Method") != r.rpc {
			t.Errorf("%s: version %q, Mcp-Method %q", r.rpc, r.header.Get("Mcp-Protocol-Version"), r.header.Get("Mcp-Method"))
		}
		if r.rpc == "tools/call" && r.header.Get("Mcp-Name") == "" {
			t.Errorf("tools/call without Mcp-Name")
		}
		if r.rpc == "tools/call" && r.header.Get("Mcp-Name") == "region" && r.header.Get("Mcp-Param-Region") != "eu-west" {
			t.Errorf("tools/call region: Mcp-Param-Region %q", r.header.Get("Mcp-Param-Region"))
		}
	}
	if reqs[0].rpc != "server/discover" {
		t.Errorf("first request %q, want server/discover", reqs[0].rpc)
	}
}

// A go-sdk client of the newest era against a server of sessions: its
// server/discover is refused with the server's own JSON-RPC error, which
// the bridge must relay as it is for the client to fall back to
// initialize.
func TestEraFallback(t *testing.T) {
	h := start(t, setup{})
	if v := h.cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %q, want 2025-11-25", v)
	}
	if got := h.mustCall("echo", "hi"); got != "hi" {
		t.Errorf("echo: %q", got)
	}
}
