package mcp_test

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	mcpserver "mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// A call's SSE answer, spoken by hand (apitest.RawMCP): resumed after a
// dropped connection with Last-Event-ID, or cancelled when no one comes
// back within the grace.

// sseEvent is one event of an MCP SSE stream.
type sseEvent struct{ id, data, retry string }

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
		case strings.HasPrefix(line, "retry: "):
			ev.retry = strings.TrimPrefix(line, "retry: ")
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
	// The priming event says when to come back (SEP-1699).
	if ev, ok := nextEvent(br); !ok || ev.data != "" || ev.retry != "1000" {
		t.Errorf("first event %+v, want the priming event with retry: 1000", ev)
	}
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
	testenv.WaitFor(t, "the call to end", func() bool { return d.InFlight() == 0 })

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
	testenv.WaitFor(t, "the abandoned call to be cancelled", func() bool { return d.InFlight() == 0 })
}

// TestMCPResumeOfAnEndedStreamLeavesTheGETStream: a client that resumes a
// call's stream after it ended and was delivered whole (the TypeScript
// SDK does, after a JSON-RPC error that came on a stream) gets an open,
// empty stream; the session's GET connection is not taken over and still
// gets the session's messages (else the two connections end each other
// once a second).
func TestMCPResumeOfAnEndedStreamLeavesTheGETStream(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global", "env": {"` + demo.EnvDescribe + `": "old"}}`})
	m := d.RawMCP(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	get := m.Send(ctx, "GET", "", "")
	defer get.Body.Close()
	gbr := bufio.NewReader(get.Body)
	if ev, ok := nextEvent(gbr); !ok || ev.retry == "" {
		t.Fatalf("the GET stream's first event %+v", ev)
	}
	// The first call of a session with no roots is streamed (mcpx's
	// warning first); strict answers it with a JSON-RPC error.
	resp := m.Send(ctx, "POST", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo__strict","arguments":{"n":-1}}}`, "")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("the first call answered %s, want a stream", ct)
	}
	br := bufio.NewReader(resp.Body)
	var last string
	for ev, ok := nextEvent(br); ok; ev, ok = nextEvent(br) {
		last = ev.id
		if strings.Contains(ev.data, `"id":3`) && !strings.Contains(ev.data, `"error"`) {
			t.Errorf("strict answered %s, want an error", ev.data)
		}
	}
	resp.Body.Close()

	resume := m.Send(ctx, "GET", "", last)
	defer resume.Body.Close()
	rbr := bufio.NewReader(resume.Body)
	if ev, ok := nextEvent(rbr); resume.StatusCode != 200 || !ok || ev.id != last || ev.data != "" {
		t.Fatalf("the resume of an ended stream: %d, first event %+v (ok %v), want 200 and a priming event with id %s", resume.StatusCode, ev, ok, last)
	}
	m.Send(ctx, "POST", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"demo__redescribe","arguments":{"description":"new"}}}`, "").Body.Close()
	for {
		ev, ok := nextEvent(gbr)
		if !ok {
			t.Fatal("the GET connection ended: the resume took it over")
		}
		if strings.Contains(ev.data, "notifications/tools/list_changed") {
			break
		}
	}
}
