package api_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

// everythingDaemon serves the npm reference server, whose
// trigger-elicitation-request tool asks the client for a form (it lists the
// tool only to clients that declare elicitation).
func everythingDaemon(t *testing.T, inputWait time.Duration) *apitest.Daemon {
	t.Helper()
	return apitest.Start(t, apitest.Options{Config: apitest.EverythingConfig(t, nil, nil), API: func(o *api.Options) { o.InputWait = inputWait }})
}

const elicitPath = "/v1/servers/everything/tools/trigger-elicitation-request"

// answer posts an InputAnswer for in through c.
func answer(t *testing.T, c *apitest.Client, in wire.InputRequest, action, content string) *apitest.Response {
	t.Helper()
	body, _ := json.Marshal(wire.InputAnswer{Input: in.Input, Action: action, Content: json.RawMessage(content)})
	return c.Do(t, "POST", "/v1/calls/"+in.Call+"/input", string(body))
}

// An SSE caller sees the call's id, then the child's form; a wrong answer
// is a 400 naming the field and can be corrected; another identity cannot
// answer; the tool sees the accepted answer.
func TestElicitationAnsweredOverSSE(t *testing.T) {
	d := everythingDaemon(t, 0)
	resp := streamRequest(t, t.Context(), d.Unix, elicitPath, `{}`, t.TempDir())
	defer resp.Body.Close()
	var names []string
	var call wire.CallStarted
	var result apitest.ToolResult
	apitest.ReadEvents(t, resp.Body, func(ev apitest.Event) {
		names = append(names, ev.Name)
		switch ev.Name {
		case wire.StreamCall:
			json.Unmarshal([]byte(ev.Data), &call)
		case wire.StreamInput:
			var in wire.InputRequest
			if err := json.Unmarshal([]byte(ev.Data), &in); err != nil {
				t.Fatal(err)
			}
			if in.Call != call.Call || in.Kind != wire.InputElicitation || !strings.Contains(string(in.RequestedSchema), `"name"`) {
				t.Errorf("input event %s; call %q", ev.Data, call.Call)
			}
			// The TCP owner is another identity than the socket's caller.
			if r := answer(t, d.TCP, in, "accept", `{"name":"Mallory"}`); r.StatusCode != 404 {
				t.Errorf("another caller's answer: status %d %s, want 404", r.StatusCode, r.Bytes)
			}
			r := answer(t, d.Unix, in, "accept", `{"name":42}`)
			if p := r.Problem(t); r.StatusCode != 400 || p.Field != "content.name" {
				t.Errorf("a wrongly typed answer: %d %+v, want 400 naming content.name", r.StatusCode, p)
			}
			if r := answer(t, d.Unix, in, "maybe", `{}`); r.StatusCode != 400 || r.Problem(t).Field != "action" {
				t.Errorf("a bad action: %d %s, want 400 naming action", r.StatusCode, r.Bytes)
			}
			if r := answer(t, d.Unix, in, "accept", `{"name":"Ada Lovelace","check":true}`); r.StatusCode != 204 {
				t.Errorf("the answer: status %d %s, want 204", r.StatusCode, r.Bytes)
			}
			if r := answer(t, d.Unix, in, "accept", `{"name":"Twice"}`); r.StatusCode != 404 {
				t.Errorf("a second answer: status %d %s, want 404", r.StatusCode, r.Bytes)
			}
		case wire.StreamResult:
			json.Unmarshal([]byte(ev.Data), &result)
		}
	})
	if want := []string{wire.StreamCall, wire.StreamInput, wire.StreamContext, wire.StreamResult}; !slices.Equal(names, want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	if text := result.Text(); !strings.Contains(text, "Name: Ada Lovelace") || !strings.Contains(text, "Agreed to terms: true") {
		t.Errorf("the tool saw %q, want the answer", text)
	}
}

// A caller that is not streaming cannot be asked: the child gets a decline
// at once. A streaming caller that does not answer in time gets the same.
func TestElicitationDeclinedWithoutAnswer(t *testing.T) {
	d := everythingDaemon(t, 300*time.Millisecond)
	r := d.Unix.Do(t, "POST", elicitPath, `{}`, cwdHeader(t.TempDir())...).Result(t)
	if !strings.Contains(r.Text(), "User declined") {
		t.Errorf("a plain call's result %q, want the tool's decline", r.Text())
	}

	resp := streamRequest(t, t.Context(), d.Unix, elicitPath, `{}`, t.TempDir())
	defer resp.Body.Close()
	var names []string
	var result apitest.ToolResult
	apitest.ReadEvents(t, resp.Body, func(ev apitest.Event) {
		names = append(names, ev.Name)
		if ev.Name == wire.StreamResult {
			json.Unmarshal([]byte(ev.Data), &result)
		}
	})
	if want := []string{wire.StreamCall, wire.StreamInput, wire.StreamContext, wire.StreamResult}; !slices.Equal(names, want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	if !strings.Contains(result.Text(), "User declined") {
		t.Errorf("an unanswered stream's result %q, want the tool's decline", result.Text())
	}
}

// A caller that hangs up while the child waits for its answer: the child
// gets a decline and the cancellation, its call ends, and the instance
// serves the next call.
func TestElicitationCallerDisconnects(t *testing.T) {
	d := everythingDaemon(t, time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	resp := streamRequest(t, ctx, d.Unix, elicitPath, `{}`, t.TempDir())
	pid := 0
	apitest.ReadEvents(t, resp.Body, func(ev apitest.Event) {
		if ev.Name == wire.StreamInput {
			pid = instancePid(t, d)
			cancel()
		}
	})
	resp.Body.Close()
	waitInstance(t, d, "the abandoned call to end", func(in broker.Instance) bool { return in.InFlight == 0 })
	if r := d.Unix.Do(t, "POST", "/v1/servers/everything/tools/echo", `{"message":"after"}`, cwdHeader(t.TempDir())...).Result(t); r.Text() != "Echo: after" {
		t.Errorf("echo after the hang-up = %+v", r)
	}
	if got := instancePid(t, d); pid == 0 || got != pid {
		t.Errorf("child pid %d after the hang-up, %d before: want the same child serving on", got, pid)
	}
}

// instancePid is the pid of d's one instance.
func instancePid(t *testing.T, d *apitest.Daemon) int {
	t.Helper()
	var doc struct{ Instances []broker.Instance }
	d.Unix.Do(t, "GET", "/v1/instances", "").Decode(t, &doc)
	if len(doc.Instances) != 1 {
		t.Fatalf("instances %+v, want one", doc.Instances)
	}
	return doc.Instances[0].Pid
}
