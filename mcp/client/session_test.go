package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

func TestInitializeResult(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-06-18")
	want := `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"peer","version":"1"}}`
	if got := string(s.InitializeResult()); got != want {
		t.Errorf("InitializeResult = %s, want %s", got, want)
	}
}

func TestInstructions(t *testing.T) {
	const init = `{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"peer","version":"1"}`
	for _, tc := range []struct{ extra, want string }{
		{``, ""},
		{`,"instructions":"Call list_ids first: every tool takes an id."`, "Call list_ids first: every tool takes an id."},
		{`,"instructions":""`, ""},
		{`,"instructions":{"text":"not a string"}`, ""},
	} {
		s := newPeer(t).connectResult(Options{}, init+tc.extra+`}`)
		if got := s.Instructions(); got != tc.want {
			t.Errorf("initialize result with %s: Instructions = %q, want %q", tc.extra, got, tc.want)
		}
	}
}

func TestVersionNegotiation(t *testing.T) {
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			s := newPeer(t).connect(Options{}, v)
			if got := s.ProtocolVersion(); got != v {
				t.Errorf("ProtocolVersion = %q, want %q", got, v)
			}
		})
	}
	for _, v := range []string{"2026-07-28", "1999-01-01", ""} {
		t.Run("reject "+v, func(t *testing.T) {
			p := newPeer(t)
			ch := make(chan error, 1)
			go func() {
				_, err := Connect(t.Context(), p.tr, Options{Era: EraHandshake})
				ch <- err
			}()
			p.recv()
			p.send(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"` + v + `","capabilities":{},"serverInfo":{"name":"peer","version":"1"}}}`)
			err := <-ch
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			for _, want := range []string{fmt.Sprintf("%q", v), "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %s", err, want)
				}
			}
		})
	}
}

// TestErasVersions: the eras Connect tries speak, in their order, the
// versions package jsonrpc lists, and the handshake offers its latest.
func TestErasVersions(t *testing.T) {
	var got []string
	for _, e := range eras {
		got = append(got, e.versions()...)
	}
	if d := cmp.Diff(jsonrpc.SupportedVersions(), got); d != "" {
		t.Errorf("the eras' versions (-jsonrpc +eras):\n%s", d)
	}
	if v := (handshake{}).versions()[0]; v != jsonrpc.LatestHandshake {
		t.Errorf("the handshake offers %s, want %s", v, jsonrpc.LatestHandshake)
	}
}

func TestPingBeforeInitializeResponse(t *testing.T) {
	p := newPeer(t)
	ch := make(chan error, 1)
	go func() {
		s, err := Connect(t.Context(), p.tr, Options{Era: EraHandshake})
		if err == nil {
			s.Close()
		}
		ch <- err
	}()
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":0,"method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":0,"result":{}}`)
	p.send(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"peer","version":"1"}}}`)
	p.expect(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
}

func TestConnectChildDiesDuringInitialize(t *testing.T) {
	p := newPeer(t)
	ch := make(chan error, 1)
	go func() {
		// No deadline: Connect must notice the EOF, not a timeout.
		_, err := Connect(context.Background(), p.tr, Options{Era: EraHandshake})
		ch <- err
	}()
	p.recv()
	p.out.Close()
	err := <-ch
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "EOF") {
		t.Errorf("Connect error = %v, want ErrClosed mentioning EOF", err)
	}
}

func TestConnectCancelledSendsNoCancel(t *testing.T) {
	p := newPeer(t)
	ctx, cancel := context.WithCancel(t.Context())
	ch := make(chan error, 1)
	go func() {
		_, err := Connect(ctx, p.tr, Options{Era: EraHandshake})
		ch <- err
	}()
	p.recv()
	cancel()
	if err := <-ch; !errors.Is(err, context.Canceled) {
		t.Errorf("Connect error = %v, want context.Canceled", err)
	}
	// The transport is closed without a notifications/cancelled.
	if line, err := p.in.ReadString('\n'); err == nil {
		t.Errorf("client sent %q after a cancelled initialize", line)
	}
}

func TestCallResultBytesUnchanged(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	ch := make(chan callResult, 1)
	go func() {
		res, err := s.CallTool(t.Context(), "echo", json.RawMessage("{\n  \"message\": \"hi\"\n}"), nil)
		ch <- callResult{res, err}
	}()
	p.expect(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
	const result = `{ "content" : [{"type":"text","text":"hi \u00e9"}],"isError":false }`
	p.send(`{"jsonrpc":"2.0","id":2,"result":` + result + `}`)
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if string(r.res) != result {
		t.Errorf("result = %s, want %s", r.res, result)
	}
}

func TestCallInvalidParams(t *testing.T) {
	s := newPeer(t).connect(Options{}, "2025-11-25")
	if _, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":`), nil); err == nil {
		t.Error("CallTool with invalid JSON arguments succeeded")
	}
	if n := s.InFlight(); n != 0 {
		t.Errorf("InFlight = %d after a failed call", n)
	}
}

func TestRPCError(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	ch := goCall(t.Context(), s, "tools/call", `{"name":"nope"}`, nil)
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown tool: nope","data":{"tool":"nope"}}}`)
	r := <-ch
	var rerr *jsonrpc.Error
	if !errors.As(r.err, &rerr) {
		t.Fatalf("error = %v, want *jsonrpc.Error", r.err)
	}
	want := &jsonrpc.Error{Code: -32602, Message: "Unknown tool: nope", Data: json.RawMessage(`{"tool":"nope"}`)}
	if d := cmp.Diff(want, rerr); d != "" {
		t.Errorf("RPCError mismatch (-want +got):\n%s", d)
	}
}

func TestPagination(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	type listResult struct {
		tools json.RawMessage
		err   error
	}
	list := func() <-chan listResult {
		ch := make(chan listResult, 1)
		go func() {
			tools, err := s.Tools(t.Context())
			ch <- listResult{tools, err}
		}()
		return ch
	}
	servePages := func(firstID int) {
		p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}`, firstID))
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"c\"1"}}`, firstID))
		p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"cursor":"c\"1"}}`, firstID+1))
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"tools":[ ],"nextCursor":"2"}}`, firstID+1))
		p.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"cursor":"2"}}`, firstID+2))
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"tools":[{"name":"c","inputSchema":{"type":"object"}}]}}`, firstID+2))
	}
	const want = `[{"name":"a"},{"name":"b"},{"name":"c","inputSchema":{"type":"object"}}]`

	ch := list()
	servePages(2)
	r := <-ch
	if r.err != nil || string(r.tools) != want {
		t.Fatalf("Tools = %s, %v; want %s", r.tools, r.err, want)
	}

	// Cached: no request reaches the child.
	if tools, err := s.Tools(t.Context()); err != nil || string(tools) != want {
		t.Fatalf("cached Tools = %s, %v", tools, err)
	}

	// list_changed invalidates; the next Tools lists again. A ping sent
	// after the notification proves the reader has handled it.
	p.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	p.send(`{"jsonrpc":"2.0","id":"sync","method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":"sync","result":{}}`)
	ch = list()
	servePages(5)
	if r := <-ch; r.err != nil || string(r.tools) != want {
		t.Fatalf("Tools after list_changed = %s, %v", r.tools, r.err)
	}
}

func TestPaginationRepeatedCursor(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	ch := make(chan error, 1)
	go func() {
		_, err := s.Prompts(t.Context())
		ch <- err
	}()
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":2,"result":{"prompts":[],"nextCursor":"x"}}`)
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":3,"result":{"prompts":null,"nextCursor":"x"}}`)
	if err := <-ch; err == nil || !strings.Contains(err.Error(), "repeated cursor") {
		t.Errorf("Prompts error = %v, want repeated cursor", err)
	}
}

func TestProgressRouting(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	const n = 50
	type got struct {
		mu   sync.Mutex
		msgs []string
	}
	gots := make([]*got, n)
	chs := make([]<-chan callResult, n)
	for i := range n {
		g := &got{}
		gots[i] = g
		chs[i] = goCall(t.Context(), s, "tools/call", fmt.Sprintf(`{"name":"progress","arguments":{"i":%d},"_meta":{"other":"kept"}}`, i), func(params json.RawMessage) {
			var pr struct{ Message string }
			json.Unmarshal(params, &pr)
			g.mu.Lock()
			g.msgs = append(g.msgs, pr.Message)
			g.mu.Unlock()
		})
	}
	type req struct {
		id    json.RawMessage
		i     int
		token json.RawMessage
	}
	reqs := make([]req, n)
	for k := range n {
		var m struct {
			ID     json.RawMessage
			Params struct {
				Arguments struct{ I int }
				Meta      map[string]json.RawMessage `json:"_meta"`
			}
		}
		if err := json.Unmarshal([]byte(p.recv()), &m); err != nil {
			t.Fatal(err)
		}
		if string(m.Params.Meta["other"]) != `"kept"` {
			t.Errorf("_meta lost a field: %v", m.Params.Meta)
		}
		reqs[k] = req{m.ID, m.Params.Arguments.I, m.Params.Meta["progressToken"]}
	}
	tokens := map[string]bool{}
	for _, r := range reqs {
		if tokens[string(r.token)] {
			t.Fatalf("progress token %s used twice", r.token)
		}
		tokens[string(r.token)] = true
	}
	// Two progress notifications per call, interleaved across calls, then
	// the responses in reverse order.
	for step := range 2 {
		for _, r := range reqs {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"message":"%d-%d"}}`, r.token, step, r.i, step))
		}
	}
	for k := n - 1; k >= 0; k-- {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"i":%d}}`, reqs[k].id, reqs[k].i))
	}
	for i := range n {
		r := <-chs[i]
		if r.err != nil || string(r.res) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Errorf("call %d = %s, %v", i, r.res, r.err)
		}
		want := []string{fmt.Sprintf("%d-0", i), fmt.Sprintf("%d-1", i)}
		if d := cmp.Diff(want, gots[i].msgs); d != "" {
			t.Errorf("call %d progress (-want +got):\n%s", i, d)
		}
	}
}

func TestProgressTokenMerge(t *testing.T) {
	tests := []struct{ params, want string }{
		{``, `{"_meta":{"progressToken":9}}`},
		{`null`, `{"_meta":{"progressToken":9}}`},
		{`{}`, `{"_meta":{"progressToken":9}}`},
		{`{"name":"x"}`, `{"_meta":{"progressToken":9},"name":"x"}`},
		{`{"name":"x","_meta":{}}`, `{"name":"x","_meta":{"progressToken":9}}`},
		{`{"name":"x","_meta":{"a":[1,{"b":"}"}]}}`, `{"name":"x","_meta":{"progressToken":9,"a":[1,{"b":"}"}]}}`},
		{`{"_meta":{"progressToken":"theirs","z":1},"arguments":{"_meta":2}}`, `{"_meta":{"progressToken":9,"z":1},"arguments":{"_meta":2}}`},
		{`{"arguments":{"_meta":{"progressToken":1}}}`, `{"_meta":{"progressToken":9},"arguments":{"_meta":{"progressToken":1}}}`},
	}
	for _, tt := range tests {
		got, err := withProgressToken([]byte(tt.params), 9)
		if err != nil || string(got) != tt.want {
			t.Errorf("withProgressToken(%s) = %s, %v; want %s", tt.params, got, err, tt.want)
		}
	}
}

func TestCancellation(t *testing.T) {
	for _, tt := range []struct {
		name   string
		ctx    func() (context.Context, func())
		reason string
		err    error
	}{
		{"caller gone", func() (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(context.Background())
			return ctx, func() { cancel(errors.New("client disconnected")) }
		}, "the caller went away: client disconnected", context.Canceled},
		{"timeout", func() (context.Context, func()) {
			ctx := &expiring{Context: context.Background(), done: make(chan struct{})}
			return ctx, func() { close(ctx.done) }
		}, "timeout: the caller's deadline passed", context.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPeer(t)
			s := p.connect(Options{}, "2025-11-25")
			ctx, cancel := tt.ctx()
			ch := goCall(ctx, s, "tools/call", `{"name":"sleep"}`, nil)
			p.expect(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep"}}`)
			cancel()
			p.expect(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"` + tt.reason + `"}}`)
			r := <-ch
			if !errors.Is(r.err, tt.err) {
				t.Errorf("Call error = %v, want %v", r.err, tt.err)
			}
			// The late response is dropped; the session goes on.
			p.send(`{"jsonrpc":"2.0","id":2,"result":{"late":true}}`)
			ch = goCall(t.Context(), s, "ping", "", nil)
			p.expect(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			p.send(`{"jsonrpc":"2.0","id":3,"result":{}}`)
			if r := <-ch; r.err != nil || string(r.res) != `{}` {
				t.Errorf("ping after cancel = %s, %v", r.res, r.err)
			}
			if n := s.InFlight(); n != 0 {
				t.Errorf("InFlight = %d", n)
			}
		})
	}
}

// expiring is a context whose deadline passes when the test says so, so no
// test depends on the wall clock.
type expiring struct {
	context.Context
	done chan struct{}
}

func (e *expiring) Done() <-chan struct{} { return e.done }

func (e *expiring) Err() error {
	select {
	case <-e.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestGarbageLine(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	ch := goCall(t.Context(), s, "tools/call", `{"name":"x"}`, nil)
	p.recv()
	garbage := "Server listening on port 3000 " + strings.Repeat("x", 500)
	p.send(garbage)
	r := <-ch
	if !errors.Is(r.err, ErrClosed) {
		t.Errorf("pending call error = %v, want ErrClosed", r.err)
	}
	<-s.Done()
	err := s.Err()
	var perr *ProtocolError
	if !errors.Is(err, ErrClosed) || !errors.As(err, &perr) {
		t.Fatalf("Err = %v, want ErrClosed and *ProtocolError", err)
	}
	msg := err.Error()
	for _, want := range []string{`"Server listening on port 3000 xxx`, "must write only JSON-RPC messages to stdout (logs belong on stderr)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Err %q does not contain %q", msg, want)
		}
	}
	if len(msg) > 400 {
		t.Errorf("Err is %d bytes long; the line should be truncated: %s", len(msg), msg)
	}
	if _, err := s.Call(t.Context(), "ping", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after end = %v, want ErrClosed", err)
	}
}

func TestJSONButNotJSONRPC(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	p.send(`{"level":"info","msg":"started"}`)
	<-s.Done()
	if err := s.Err(); !strings.Contains(err.Error(), `not a JSON-RPC message: "{\"level\":\"info\"`) || !strings.Contains(err.Error(), "stderr") {
		t.Errorf("Err = %v", err)
	}
}

func TestEOFMidCall(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	chs := []<-chan callResult{
		goCall(t.Context(), s, "tools/call", `{"name":"a"}`, nil),
		goCall(t.Context(), s, "tools/call", `{"name":"b"}`, func(json.RawMessage) {}),
	}
	p.recv()
	p.recv()
	p.out.Close()
	for _, ch := range chs {
		if r := <-ch; !errors.Is(r.err, ErrClosed) || !strings.Contains(r.err.Error(), "EOF") {
			t.Errorf("pending call error = %v, want ErrClosed mentioning EOF", r.err)
		}
	}
	<-s.Done()
	if n := s.InFlight(); n != 0 {
		t.Errorf("InFlight = %d", n)
	}
}

func TestCloseFailsPending(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	ch := goCall(t.Context(), s, "tools/call", `{"name":"a"}`, nil)
	p.recv()
	s.Close()
	if r := <-ch; !errors.Is(r.err, ErrClosed) {
		t.Errorf("pending call error = %v, want ErrClosed", r.err)
	}
	if err := s.Err(); err != ErrClosed {
		t.Errorf("Err = %v, want ErrClosed", err)
	}
	s.Close() // idempotent
}

func TestBigResult(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	text := strings.Repeat("abcdefgh", 1<<20) // 8 MiB
	result := `{"content":[{"type":"text","text":"` + text + `"}]}`
	ch := goCall(t.Context(), s, "tools/call", `{"name":"big"}`, nil)
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":2,"result":` + result + `}`)
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !bytes.Equal(r.res, []byte(result)) {
		t.Errorf("big result: got %d bytes, want %d", len(r.res), len(result))
	}
}

func TestBatchFromChild(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-03-26")
	ch := goCall(t.Context(), s, "tools/call", `{"name":"a"}`, nil)
	p.recv()
	p.send(`[{"jsonrpc":"2.0","id":9,"method":"ping"},{"jsonrpc":"2.0","id":2,"result":{"ok":1}}]`)
	p.expect(`{"jsonrpc":"2.0","id":9,"result":{}}`)
	if r := <-ch; r.err != nil || string(r.res) != `{"ok":1}` {
		t.Errorf("call = %s, %v", r.res, r.err)
	}
}

func TestLoggingNotification(t *testing.T) {
	var buf syncBuffer
	p := newPeer(t)
	p.connect(Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}, "2025-11-25")
	p.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","logger":"db","data":"disk almost full"}}`)
	p.send(`{"jsonrpc":"2.0","id":"sync","method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":"sync","result":{}}`)
	got := buf.String()
	for _, want := range []string{"level=WARN", `data="disk almost full"`, "logger=db"} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q does not contain %q", got, want)
		}
	}
}

func TestFileURI(t *testing.T) {
	for in, want := range map[string]string{
		"/src/app":    "file:///src/app",
		"/src/my app": "file:///src/my%20app",
		"/a/ü/100%":   "file:///a/%C3%BC/100%25",
		"/x/?y#z":     "file:///x/%3Fy%23z",
		"/":           "file:///",
	} {
		if got := FileURI(in); got != want {
			t.Errorf("FileURI(%q) = %q, want %q", in, got, want)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestStuckChildHonoursContext: a child that stops reading its stdin must
// not hold callers past their context, neither the one blocked in the write
// nor those waiting for the writer.
func TestStuckChildHonoursContext(t *testing.T) {
	toChildR, toChildW, err := os.Pipe() // the "child" never reads toChildR
	if err != nil {
		t.Fatal(err)
	}
	fromChildR, fromChildW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer toChildR.Close()
	defer fromChildW.Close()
	// The child answers initialize, then never reads again.
	go func() {
		bufio.NewReader(toChildR).ReadString('\n')
		io.WriteString(fromChildW, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"stuck","version":"1"}}}`+"\n")
	}()
	s, err := Connect(t.Context(), NewStdio(fromChildR, toChildW), Options{Era: EraHandshake})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	big := json.RawMessage(`{"pad":"` + strings.Repeat("x", 4<<20) + `"}`) // far more than a pipe holds
	ctx1, cancel1 := context.WithCancel(t.Context())
	ch1 := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx1, "a", big, nil)
		ch1 <- err
	}()
	ctx2, cancel2 := context.WithCancel(t.Context())
	ch2 := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx2, "b", nil, nil)
		ch2 <- err
	}()
	cancel2()
	if err := <-ch2; !errors.Is(err, context.Canceled) {
		t.Errorf("waiting caller: %v, want context.Canceled", err)
	}
	cancel1()
	if err := <-ch1; !errors.Is(err, context.Canceled) {
		t.Errorf("writing caller: %v, want context.Canceled", err)
	}
	// Half a message sits in the child's stdin: the session is over (unless
	// the big write never started).
	select {
	case <-s.Done():
		if err := s.Err(); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "stdin") {
			t.Errorf("Err after a cut write = %v", err)
		}
	default:
		t.Log("the big write never started; the session is intact")
	}
}

func TestHasToolIndexFollowsListChanged(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	has := func(name string) <-chan bool {
		ch := make(chan bool, 1)
		go func() {
			ok, err := s.HasTool(t.Context(), name)
			if err != nil {
				t.Errorf("HasTool(%q): %v", name, err)
			}
			ch <- ok
		}()
		return ch
	}
	ch := has("a")
	p.expect(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"},{"name":"b"}]}}`)
	if !<-ch {
		t.Fatal("HasTool(a) = false; the child lists a")
	}
	// Answered from the index: no request reaches the child.
	if !<-has("b") || <-has("zz") {
		t.Fatal("cached HasTool answers wrong")
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	p.send(`{"jsonrpc":"2.0","id":"sync","method":"ping"}`)
	p.expect(`{"jsonrpc":"2.0","id":"sync","result":{}}`)
	ch = has("a")
	p.expect(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`)
	p.send(`{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"b"}]}}`)
	if <-ch {
		t.Fatal("HasTool(a) = true after the child dropped it")
	}
}

// Tool answers the Tool object as the child sent it, from the cached list;
// the first of two by one name wins.
func TestToolFromIndex(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	type answer struct {
		tool  string
		found bool
	}
	get := func(name string) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			tool, found, err := s.Tool(t.Context(), name)
			if err != nil {
				t.Errorf("Tool(%q): %v", name, err)
			}
			ch <- answer{string(tool), found}
		}()
		return ch
	}
	ch := get("a")
	p.expect(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a", "inputSchema":{"type":"object"}},{"name":"b"},{"name":"a","x":1}]}}`)
	if got := <-ch; !got.found || got.tool != `{"name":"a", "inputSchema":{"type":"object"}}` {
		t.Errorf("Tool(a) = %+v, want the first a as sent", got)
	}
	if got := <-get("zz"); got.found || got.tool != "" {
		t.Errorf("Tool(zz) = %+v, want none", got)
	}
}
