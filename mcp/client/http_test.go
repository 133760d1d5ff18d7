package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// seenRequest is what the test server recorded of one HTTP request.
type seenRequest struct {
	Method, Session, Version, Accept, Auth string
}

// httpServer serves a go-sdk server through mcp.NewStreamableHTTPHandler on
// 127.0.0.1 and records the requests it gets.
type httpServer struct {
	srv  *mcp.Server
	ts   *httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

func startHTTP(t *testing.T, opts *mcp.StreamableHTTPOptions) *httpServer {
	t.Helper()
	h := &httpServer{srv: demo.NewServer()}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.srv }, opts)
	h.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, seenRequest{r.Method, r.Header.Get("Mcp-Session-Id"), r.Header.Get("MCP-Protocol-Version"), r.Header.Get("Accept"), r.Header.Get("Authorization")})
		h.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(h.ts.Close)
	return h
}

func (h *httpServer) requests() []seenRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]seenRequest(nil), h.seen...)
}

func connectHTTP(t *testing.T, h *httpServer, opts Options) *Session {
	t.Helper()
	s, err := Connect(t.Context(), NewHTTP(h.ts.URL, map[string]string{"Authorization": "Bearer t0k"}, h.ts.Client()), opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestHTTPEcho: a go-sdk server over streamable HTTP, stateful (SSE or
// JSON answers: the stateless probe falls back to initialize) or stateless
// (it speaks 2026-07-28: no initialize, no session).
func TestHTTPEcho(t *testing.T) {
	for name, tc := range map[string]struct {
		opts    *mcp.StreamableHTTPOptions
		version string
	}{
		"sse":       {&mcp.StreamableHTTPOptions{}, "2025-11-25"},
		"json":      {&mcp.StreamableHTTPOptions{JSONResponse: true}, "2025-11-25"},
		"stateless": {&mcp.StreamableHTTPOptions{Stateless: true}, jsonrpc.StatelessVersion},
	} {
		t.Run(name, func(t *testing.T) {
			h := startHTTP(t, tc.opts)
			s := connectHTTP(t, h, Options{})
			if v := s.ProtocolVersion(); v != tc.version {
				t.Errorf("ProtocolVersion = %q, want %s", v, tc.version)
			}
			res, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"over http"}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := toolText(t, res); got != "over http" {
				t.Errorf("echo = %q", got)
			}
			tools, err := s.Tools(t.Context())
			if err != nil || !bytes.Contains(tools, []byte(`"echo"`)) {
				t.Errorf("Tools = %s, %v", truncate(tools, 200), err)
			}
		})
	}
}

func TestHTTPHeadersAndDelete(t *testing.T) {
	h := startHTTP(t, nil)
	s := connectHTTP(t, h, Options{Era: EraHandshake}) // remembered: no probe first
	if _, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"x"}`), nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var posts []seenRequest
	var deletes int
	var sid string
	for _, r := range h.requests() {
		switch r.Method {
		case http.MethodPost:
			posts = append(posts, r)
		case http.MethodDelete:
			deletes++
			if r.Session == "" {
				t.Errorf("DELETE without a session id")
			}
		}
		if r.Auth != "Bearer t0k" {
			t.Errorf("%s without the configured Authorization header", r.Method)
		}
		if r.Session != "" {
			sid = r.Session
		}
	}
	if len(posts) < 3 {
		t.Fatalf("got %d POSTs, want initialize, initialized, tools/call: %v", len(posts), posts)
	}
	want := seenRequest{Method: "POST", Accept: "application/json, text/event-stream", Auth: "Bearer t0k"}
	if d := cmp.Diff(want, posts[0]); d != "" {
		t.Errorf("initialize POST (-want +got):\n%s", d)
	}
	want.Session, want.Version = sid, "2025-11-25"
	for _, p := range posts[1:] {
		if d := cmp.Diff(want, p); d != "" {
			t.Errorf("POST after initialize (-want +got):\n%s", d)
		}
	}
	if deletes != 1 {
		t.Errorf("got %d DELETEs, want 1", deletes)
	}
}

func TestHTTPProgressAndRoots(t *testing.T) {
	h := startHTTP(t, nil)
	s := connectHTTP(t, h, Options{Root: "/srv/app"})
	var got []string
	res, err := s.CallTool(t.Context(), "progress", json.RawMessage(`{"steps":3}`), func(p json.RawMessage) {
		var pr struct{ Message string }
		json.Unmarshal(p, &pr)
		got = append(got, pr.Message)
	})
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, res); text != "done 3" {
		t.Errorf("progress = %q", text)
	}
	if d := cmp.Diff([]string{"step 1 of 3", "step 2 of 3", "step 3 of 3"}, got); d != "" {
		t.Errorf("progress (-want +got):\n%s", d)
	}
	// roots: the server asks roots/list on the call's SSE stream and we
	// answer with a POST.
	res, err = s.CallTool(t.Context(), "roots", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, res); !strings.Contains(text, `"uri":"file:///srv/app"`) {
		t.Errorf("roots = %s", text)
	}
}

func TestHTTPListChangedOnGetStream(t *testing.T) {
	h := startHTTP(t, nil)
	s := connectHTTP(t, h, Options{})
	if _, err := s.Tools(t.Context()); err != nil {
		t.Fatal(err)
	}
	h.srv.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	// The server announces the change on the GET stream; until it arrives
	// Tools serves the cached list.
	for {
		tools, err := s.Tools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(tools, []byte(`"late"`)) {
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatal("tools/list_changed never arrived")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestHTTPSessionExpired(t *testing.T) {
	h := startHTTP(t, nil)
	s := connectHTTP(t, h, Options{})
	var sid string
	for _, r := range h.requests() {
		if r.Session != "" {
			sid = r.Session
		}
	}
	// End the session behind the client's back.
	req, _ := http.NewRequest(http.MethodDelete, h.ts.URL, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	_, err = s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"x"}`), nil)
	if !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("CallTool error = %v, want ErrSessionExpired", err)
	}
	<-s.Done()
	if err := s.Err(); !errors.Is(err, ErrSessionExpired) || !errors.Is(err, ErrClosed) {
		t.Errorf("Err = %v, want ErrSessionExpired and ErrClosed", err)
	}
}

func TestHTTPNoRedirectToOtherHost(t *testing.T) {
	var hits int
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		http.Error(w, "nope", http.StatusTeapot)
	}))
	defer other.Close()
	// Same IP, other port: another host as far as URLs go.
	redirector := httptest.NewServer(http.RedirectHandler(other.URL+"/mcp", http.StatusTemporaryRedirect))
	defer redirector.Close()
	_, err := Connect(t.Context(), NewHTTP(redirector.URL, nil, nil), Options{})
	if err == nil || !strings.Contains(err.Error(), "refusing redirect") {
		t.Errorf("Connect error = %v, want a refused redirect", err)
	}
	if hits != 0 {
		t.Errorf("the other host got %d requests", hits)
	}
}

func TestHTTPStatusError(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway token", http.StatusUnauthorized)
	}))
	defer ts.Close()
	_, err := Connect(t.Context(), NewHTTP(ts.URL, nil, nil), Options{})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "bad gateway token") {
		t.Errorf("Connect error = %v, want the 401 and its body", err)
	}
}

func TestReadSSE(t *testing.T) {
	stream := ": keep-alive\r\n" +
		"id: 1\r\nretry: 250\r\ndata:\r\n\r\n" + // priming event
		"event: message\ndata: {\"a\":\ndata: 1}\n\n" +
		"event: other\ndata: x\n\n" +
		"data: " + strings.Repeat("y", 200000) + "\n\n" +
		"data: {\"unterminated\":true}"
	var got []sse.Event
	tr := &httpTransport{max: DefaultMaxMessageBytes}
	err := tr.readSSE(strings.NewReader(stream), func(ev sse.Event, _ *sse.TooLargeError) error {
		if len(ev.Data) > 100 {
			ev.Data = []byte(fmt.Sprint(len(ev.Data)))
		}
		got = append(got, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []sse.Event{
		{ID: "1", Retry: 250 * time.Millisecond, Data: []byte{}},
		{Event: "message", Data: []byte("{\"a\":\n1}")},
		{Event: "other", Data: []byte("x")},
		{Data: []byte("200000")},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(bytes.Equal)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// scriptedHTTP is a hand-written streamable HTTP server for the cases the
// go-sdk handler does not produce on demand. call answers tools/call.
func scriptedHTTP(t *testing.T, call func(w http.ResponseWriter, r *http.Request, id string), get func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			get(w, r)
			return
		}
		if r.Method == http.MethodDelete {
			return
		}
		var msg struct {
			ID     json.RawMessage
			Method string
		}
		json.NewDecoder(r.Body).Decode(&msg)
		switch {
		case msg.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		case msg.Method == "initialize":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"scripted","version":"1"}}}`, msg.ID)
		case r.Header.Get("Mcp-Session-Id") == "":
			// A handshake-era server: no request before initialize (the
			// TypeScript SDK's answer to the stateless probe).
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`)
		default:
			call(w, r, string(msg.ID))
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestHTTPResumeAfterBrokenStream(t *testing.T) {
	var mu sync.Mutex
	var lastEventIDs []string
	var pending string // the id of the request to answer on resumption
	ts := scriptedHTTP(t, func(w http.ResponseWriter, r *http.Request, id string) {
		w.Header().Set("Content-Type", "text/event-stream")
		// Priming event, then the stream drops before the response.
		fmt.Fprint(w, "id: e1\nretry: 1\ndata:\n\n")
		mu.Lock()
		pending = id
		mu.Unlock()
	}, func(w http.ResponseWriter, r *http.Request) {
		last := r.Header.Get("Last-Event-ID")
		if last == "" {
			w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream
			return
		}
		mu.Lock()
		lastEventIDs = append(lastEventIDs, last)
		id := pending
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resumed\":true}}\n\n", id)
	})
	s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v := s.ProtocolVersion(); v != "2025-06-18" {
		t.Errorf("ProtocolVersion = %q", v)
	}
	res, err := s.CallTool(t.Context(), "x", nil, nil)
	if err != nil || string(res) != `{"resumed":true}` {
		t.Fatalf("CallTool = %s, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if d := cmp.Diff([]string{"e1"}, lastEventIDs); d != "" {
		t.Errorf("Last-Event-ID (-want +got):\n%s", d)
	}
}

func TestHTTPStreamEndsWithoutResponse(t *testing.T) {
	ts := scriptedHTTP(t, func(w http.ResponseWriter, r *http.Request, id string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"bye\"}}\n\n")
	}, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMethodNotAllowed)
	})
	s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.CallTool(t.Context(), "x", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "stream ended before the response") {
		t.Errorf("CallTool error = %v, want the stream's early end", err)
	}
	if n := s.InFlight(); n != 0 {
		t.Errorf("InFlight = %d", n)
	}
}

func TestHTTPCancel(t *testing.T) {
	h := startHTTP(t, nil)
	s := connectHTTP(t, h, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	ch := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, "sleep", json.RawMessage(`{"ms":600000}`), nil)
		ch <- err
	}()
	// Cancel once the call is on its way (it stays in flight while sleeping).
	for s.InFlight() == 0 {
		if _, err := s.Call(t.Context(), "ping", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-ch; !errors.Is(err, context.Canceled) {
		t.Errorf("sleep error = %v, want context.Canceled", err)
	}
	if _, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"still here"}`), nil); err != nil {
		t.Errorf("echo after cancel: %v", err)
	}
}

// BenchmarkCallToolHTTP measures tools/call over streamable HTTP to the
// demo server behind go-sdk's handler (SSE answers), in process.
func BenchmarkCallToolHTTP(b *testing.B) {
	for _, jsonResponse := range []bool{false, true} {
		b.Run(fmt.Sprint("JSONResponse=", jsonResponse), func(b *testing.B) {
			srv := demo.NewServer()
			handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
			ts := httptest.NewServer(handler)
			defer ts.Close()
			s, err := Connect(b.Context(), NewHTTP(ts.URL, nil, nil), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			args := json.RawMessage(`{"message":"hello"}`)
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.CallTool(context.Background(), "echo", args, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// TestHTTPCancelDuringSendIsRepeated: a call cancelled while its POST is
// still on its way may reach the server after the cancellation (each POST
// is handled on its own), which the server then ignores as one for an
// unknown request; the cancellation is sent again a little later.
func TestHTTPCancelDuringSendIsRepeated(t *testing.T) {
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil)
	var mu sync.Mutex
	cancels := 0
	callArrived := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		switch {
		case bytes.Contains(body, []byte(`"tools/call"`)):
			// Hold the POST until the client gives up on it.
			callArrived <- struct{}{}
			<-r.Context().Done()
			return
		case bytes.Contains(body, []byte(`"notifications/cancelled"`)):
			mu.Lock()
			cancels++
			mu.Unlock()
		}
		handler.ServeHTTP(w, r)
	}))
	defer ts.Close()
	s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, ts.Client()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-callArrived; cancel() }()
	if _, err := s.CallTool(ctx, "sleep", json.RawMessage(`{"ms":600000}`), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("call error = %v, want context.Canceled", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := cancels
		mu.Unlock()
		if n >= 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server got %d cancellations of a call cut short in its POST, want 2", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHTTPGetStreamBeforeInitialized: the GET stream is open before
// notifications/initialized is sent, so a server that asks roots/list the
// moment it is initialized, on the GET stream, is answered. The server
// here does what the official TypeScript SDK's does: a message for the GET
// stream when none is open is dropped (server-everything then waited 60 s
// for its roots under load).
func TestHTTPGetStreamBeforeInitialized(t *testing.T) {
	var (
		mu      sync.Mutex
		stream  chan string // the open GET stream's messages; nil = none
		dropped bool
		answer  = make(chan string, 1)
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			ch := make(chan string, 4)
			mu.Lock()
			stream = ch
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			for {
				select {
				case m := <-ch:
					fmt.Fprintf(w, "event: message\ndata: %s\n\n", m)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &m)
		switch {
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"eager","version":"1"}}}`, m.ID)
		case m.Method == "notifications/initialized":
			mu.Lock()
			if stream != nil {
				stream <- `{"jsonrpc":"2.0","id":"roots-1","method":"roots/list"}`
			} else {
				dropped = true
			}
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "" && string(m.ID) == `"roots-1"`:
			answer <- string(body)
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(ts.Close)
	s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, ts.Client()), Options{Root: "/srv/app"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer s.Close()
	select {
	case got := <-answer:
		if !strings.Contains(got, "file:///srv/app") {
			t.Errorf("the roots/list answer %s lacks the root", got)
		}
	case <-time.After(10 * time.Second):
		mu.Lock()
		d := dropped
		mu.Unlock()
		t.Fatalf("the server's roots/list was never answered (dropped for want of a GET stream: %v)", d)
	}
}

// TestHTTPStateless: a streamable HTTP server of the 2026-07-28 era (the
// go-sdk's stateless handler) is spoken to in that era: the probe and
// every request carry the version header and Mcp-Method (and Mcp-Name for
// a call), no session id, no GET stream and no DELETE; roots come back
// through input_required rounds, progress on the call's stream; and a
// tool whose input schema maps an argument to a header (x-mcp-header) is
// sent it as Mcp-Param-<Header>, base64-wrapped when not plain ASCII —
// the server refuses the call otherwise.
func TestHTTPStateless(t *testing.T) {
	srv := demo.NewServer()
	srv.AddTool(&mcp.Tool{Name: "where", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"opts":{"type":"object","properties":{"zone":{"type":"integer","x-mcp-header":"Zone"}}}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	type seen struct{ HTTPMethod, Method, Name, Version, Session, Region, Zone string }
	var mu sync.Mutex
	var reqs []seen
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, seen{r.Method, r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Name"), r.Header.Get("MCP-Protocol-Version"),
			r.Header.Get("Mcp-Session-Id"), r.Header.Get("Mcp-Param-Region"), r.Header.Get("Mcp-Param-Zone")})
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, ts.Client()), Options{Root: "/srv/app"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if v, e := s.ProtocolVersion(), s.Era(); v != jsonrpc.StatelessVersion || e != EraStateless {
		t.Errorf("version %q, era %q; want %s, %s", v, e, jsonrpc.StatelessVersion, EraStateless)
	}
	res, err := s.CallTool(t.Context(), "roots", nil, nil)
	if err != nil || !strings.Contains(toolText(t, res), `"uri":"file:///srv/app"`) {
		t.Errorf("roots = %s, %v", res, err)
	}
	var progress int
	res, err = s.CallTool(t.Context(), "progress", json.RawMessage(`{"steps":3}`), func(json.RawMessage) { progress++ })
	if err != nil || toolText(t, res) != "done 3" || progress != 3 {
		t.Errorf("progress = %s, %v, %d notes", res, err, progress)
	}
	if _, err := s.Tools(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"region":"eu-west","opts":{"zone":3}}`, `{"region":" zürich"}`} {
		res, err = s.CallTool(t.Context(), "where", json.RawMessage(args), nil)
		if err != nil || toolText(t, res) != args {
			t.Errorf("where %s = %s, %v", args, res, err)
		}
	}
	// A tool added later is announced on the subscriptions/listen stream:
	// the cached listing is dropped and the next one has it.
	srv.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		tools, err := s.Tools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(tools, []byte(`"late"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("tools/list_changed never arrived on subscriptions/listen")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := s.InFlight(); n != 0 {
		t.Errorf("InFlight = %d, want 0 (the listen request is not a call)", n)
	}
	s.Close()

	mu.Lock()
	defer mu.Unlock()
	if len(reqs) == 0 || reqs[0].Method != "server/discover" || reqs[0].Version != jsonrpc.StatelessVersion {
		t.Fatalf("first request %+v, want the server/discover probe with the version header", reqs)
	}
	var params []seen
	for _, r := range reqs {
		if r.HTTPMethod != http.MethodPost || r.Session != "" || r.Version != jsonrpc.StatelessVersion || r.Method == "" {
			t.Errorf("request %+v: want a POST with the version header and Mcp-Method, no session", r)
		}
		if r.Method == "tools/call" && r.Name == "" {
			t.Errorf("tools/call without Mcp-Name: %+v", r)
		}
		if r.Name == "where" {
			params = append(params, r)
		}
	}
	want := []seen{
		{"POST", "tools/call", "where", jsonrpc.StatelessVersion, "", "eu-west", "3"},
		{"POST", "tools/call", "where", jsonrpc.StatelessVersion, "", "=?base64?IHrDvHJpY2g=?=", ""},
	}
	if d := cmp.Diff(want, params); d != "" {
		t.Errorf("the where calls' headers (-want +got):\n%s", d)
	}
}

// TestHTTPProbeRefusals: however a handshake-era HTTP server refuses the
// sessionless server/discover probe — a client error, or a server error
// from one that never saw the method — the session falls back to
// initialize; an authentication failure is not taken for an era answer.
func TestHTTPProbeRefusals(t *testing.T) {
	for _, status := range []int{400, 404, 405, 500, 401} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				var msg struct {
					ID     json.RawMessage
					Method string
				}
				json.NewDecoder(r.Body).Decode(&msg)
				switch {
				case msg.Method == "server/discover":
					http.Error(w, "refused", status)
				case status == 401:
					http.Error(w, "no", status)
				case msg.Method == "initialize":
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"old","version":"1"}}}`, msg.ID)
				default:
					w.WriteHeader(http.StatusAccepted)
				}
			}))
			t.Cleanup(ts.Close)
			s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, ts.Client()), Options{})
			if status == 401 {
				if err == nil || !strings.Contains(err.Error(), "401") {
					t.Errorf("Connect = %v, want the 401", err)
				}
				if s != nil {
					s.Close()
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect after a %d probe: %v", status, err)
			}
			defer s.Close()
			if s.Era() != EraHandshake || s.ProtocolVersion() != "2025-06-18" {
				t.Errorf("era %s, version %s; want the handshake", s.Era(), s.ProtocolVersion())
			}
		})
	}
}
