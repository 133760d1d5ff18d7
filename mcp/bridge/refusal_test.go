package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/mcp/bridge"
)

// The answers go-sdk's server never gives, from a scripted endpoint at
// the edge: refusals (a problem document, the server's own JSON-RPC
// error, a plain-text error), streams that break or end unanswered, and
// what the client sees of each, line by line.

// scripted answers by the tool name of a tools/call.
// A hang call is reported on hung (if not nil) and answered never.
func scripted(deletes *atomic.Int32, hung chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			deletes.Add(1)
			return
		case http.MethodGet:
			if r.Header.Get("Last-Event-ID") != "e1" {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"resumed\":true}}\n\n")
			return
		}
		var m struct {
			ID     json.RawMessage
			Method string
			Params struct{ Name string }
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &m)
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`, m.ID)
			return
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
			return
		case "notifications/cancelled":
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		switch m.Params.Name {
		case "forbidden":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"type":"https://mcpx.dev/problems/forbidden","title":"Forbidden","status":403,"detail":"this token may not use server x"}`)
		case "rpc404":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no such method"}}`, m.ID)
		case "boom":
			http.Error(w, "boom\ngoroutine 1 [running]", http.StatusInternalServerError)
		case "pretty":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\": \"2.0\",\ndata:  \"id\": %s, \"result\": {}}\n\n", m.ID)
		case "silent":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, ": nothing to say\n\n")
		case "hang":
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			if hung != nil {
				hung <- struct{}{}
			}
			<-r.Context().Done()
		case "resume":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: e1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
		}
	}
}

func TestRefusals(t *testing.T) {
	checkNoLeaks(t)
	var deletes atomic.Int32
	srv := httptest.NewServer(scripted(&deletes, nil))
	defer srv.Close()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- bridge.Serve(context.Background(), stdinR, stdoutW, bridge.Options{
			Client: client.New(srv.URL, client.Options{Token: "t"}), Backoff: time.Millisecond, Drain: 5 * time.Second})
		stdoutW.Close()
	}()
	lines := make(chan string, 32)
	go func() {
		sc := bufio.NewScanner(stdoutR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) { fmt.Fprintln(stdinW, s) }
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if l := receive(t, lines, "the initialize answer"); !strings.Contains(l, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %s", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, name := range []string{"forbidden", "rpc404", "boom", "pretty", "silent", "", "resume"} {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q}}`, i+1, name))
	}
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`)
	send(`{oops`)
	stdinW.Close()

	want := map[string]string{
		"1":    `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"mcpx: Forbidden: this token may not use server x","data":{"status":403,"type":"https://mcpx.dev/problems/forbidden"}}}`,
		"2":    `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no such method"}}`,
		"3":    `{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"the MCP endpoint answered 500 Internal Server Error: boom","data":{"status":500}}}`,
		"4":    `{"jsonrpc":"2.0","id":4,"result":{}}`,
		"5":    `{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"the MCP endpoint ended the answer's stream without answering"}}`,
		"6":    `{"jsonrpc":"2.0","id":6,"error":{"code":-32000,"message":"the MCP endpoint answered with \"\", neither JSON nor an event stream"}}`,
		"7":    `{"jsonrpc":"2.0","id":7,"result":{"resumed":true}}`,
		"null": `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the line is not JSON"}}`,
		"":     `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
	}
	got := map[string]string{}
	for l := range lines {
		var m struct{ ID json.RawMessage }
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("a line that is not JSON: %q", l)
			continue
		}
		if _, dup := got[string(m.ID)]; dup {
			t.Errorf("a second line for id %s: %s", m.ID, l)
		}
		got[string(m.ID)] = l
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("id %s:\n got %s\nwant %s", id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d lines, want %d: %q", len(got), len(want), got)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if n := deletes.Load(); n != 1 {
		t.Errorf("%d DELETEs, want 1", n)
	}
}

// The end of ctx (SIGTERM in the CLI) ends the relay as the end of stdin
// does: the requests in flight get Options.Drain, then are cancelled; the
// session is deleted.
func TestContextEnds(t *testing.T) {
	checkNoLeaks(t)
	var deletes atomic.Int32
	hung := make(chan struct{}, 1)
	srv := httptest.NewServer(scripted(&deletes, hung))
	defer srv.Close()
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	stdoutR, stdoutW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() {
		served <- bridge.Serve(ctx, stdinR, stdoutW, bridge.Options{
			Client: client.New(srv.URL, client.Options{Token: "t"}), Drain: 10 * time.Millisecond})
		stdoutW.Close()
	}()
	lines := bufio.NewScanner(stdoutR)
	fmt.Fprintln(stdinW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if !lines.Scan() {
		t.Fatal("no initialize answer")
	}
	fmt.Fprintln(stdinW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(stdinW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hang"}}`)
	receive(t, hung, "the call in flight")
	cancel()
	if err := receive(t, served, "Serve's return"); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve: %v, want context.Canceled", err)
	}
	if n := deletes.Load(); n != 1 {
		t.Errorf("%d DELETEs, want 1", n)
	}
	go io.Copy(io.Discard, stdoutR)
}
