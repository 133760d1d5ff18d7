package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// everythingDaemon serves the npm reference server, whose
// trigger-elicitation-request tool asks the client for a form (it lists the
// tool only to clients that declare elicitation).
func everythingDaemon(t *testing.T, inputWait time.Duration) *daemon {
	t.Helper()
	proctest.CheckNoLeaks(t)
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"everything": map[string]any{
		"command": testenv.Node(t),
		"args":    []string{testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")},
		"env":     map[string]string{proctest.MarkerEnv: proctest.Marker(t)},
		"scope":   "global",
	}}})
	cfg, err := config.Parse(doc, "everything.json")
	if err != nil {
		t.Fatal(err)
	}
	return startDaemon(t, daemonOptions{cfg: cfg, inputWait: inputWait})
}

const elicitPath = "/v1/servers/everything/tools/trigger-elicitation-request"

// answer posts an InputAnswer for in through c.
func answer(t *testing.T, c *client, in wire.InputRequest, action, content string) *response {
	t.Helper()
	body, _ := json.Marshal(wire.InputAnswer{Input: in.Input, Action: action, Content: json.RawMessage(content)})
	return c.do(t, "POST", "/v1/calls/"+in.Call+"/input", string(body))
}

// An SSE caller sees the call's id, then the child's form; a wrong answer
// is a 400 naming the field and can be corrected; another identity cannot
// answer; the tool sees the accepted answer.
func TestElicitationAnsweredOverSSE(t *testing.T) {
	d := everythingDaemon(t, 0)
	resp := streamRequest(t, t.Context(), d.unix, elicitPath, `{}`, t.TempDir())
	defer resp.Body.Close()
	var names []string
	var call wire.CallStarted
	var result toolResult
	readEvents(t, resp.Body, func(ev event) {
		names = append(names, ev.name)
		switch ev.name {
		case wire.StreamCall:
			json.Unmarshal([]byte(ev.data), &call)
		case wire.StreamInput:
			var in wire.InputRequest
			if err := json.Unmarshal([]byte(ev.data), &in); err != nil {
				t.Fatal(err)
			}
			if in.Call != call.Call || in.Kind != wire.InputElicitation || !strings.Contains(string(in.RequestedSchema), `"name"`) {
				t.Errorf("input event %s; call %q", ev.data, call.Call)
			}
			// The TCP owner is another identity than the socket's caller.
			if r := answer(t, d.tcp, in, "accept", `{"name":"Mallory"}`); r.StatusCode != 404 {
				t.Errorf("another caller's answer: status %d %s, want 404", r.StatusCode, r.body)
			}
			r := answer(t, d.unix, in, "accept", `{"name":42}`)
			if p := r.problem(t); r.StatusCode != 400 || p.Field != "content.name" {
				t.Errorf("a wrongly typed answer: %d %+v, want 400 naming content.name", r.StatusCode, p)
			}
			if r := answer(t, d.unix, in, "maybe", `{}`); r.StatusCode != 400 || r.problem(t).Field != "action" {
				t.Errorf("a bad action: %d %s, want 400 naming action", r.StatusCode, r.body)
			}
			if r := answer(t, d.unix, in, "accept", `{"name":"Ada Lovelace","check":true}`); r.StatusCode != 204 {
				t.Errorf("the answer: status %d %s, want 204", r.StatusCode, r.body)
			}
			if r := answer(t, d.unix, in, "accept", `{"name":"Twice"}`); r.StatusCode != 404 {
				t.Errorf("a second answer: status %d %s, want 404", r.StatusCode, r.body)
			}
		case wire.StreamResult:
			json.Unmarshal([]byte(ev.data), &result)
		}
	})
	if len(names) != 3 || names[0] != wire.StreamCall || names[1] != wire.StreamInput || names[2] != wire.StreamResult {
		t.Fatalf("events %v, want call, input, result", names)
	}
	if text := result.text(); !strings.Contains(text, "Name: Ada Lovelace") || !strings.Contains(text, "Agreed to terms: true") {
		t.Errorf("the tool saw %q, want the answer", text)
	}
}

// A caller that is not streaming cannot be asked: the child gets a decline
// at once. A streaming caller that does not answer in time gets the same.
func TestElicitationDeclinedWithoutAnswer(t *testing.T) {
	d := everythingDaemon(t, 300*time.Millisecond)
	r := d.unix.do(t, "POST", elicitPath, `{}`, cwdHeader(t.TempDir())...).result(t)
	if !strings.Contains(r.text(), "User declined") {
		t.Errorf("a plain call's result %q, want the tool's decline", r.text())
	}

	resp := streamRequest(t, t.Context(), d.unix, elicitPath, `{}`, t.TempDir())
	defer resp.Body.Close()
	var names []string
	var result toolResult
	readEvents(t, resp.Body, func(ev event) {
		names = append(names, ev.name)
		if ev.name == wire.StreamResult {
			json.Unmarshal([]byte(ev.data), &result)
		}
	})
	if len(names) != 3 || names[1] != wire.StreamInput {
		t.Fatalf("events %v, want call, input, result", names)
	}
	if !strings.Contains(result.text(), "User declined") {
		t.Errorf("an unanswered stream's result %q, want the tool's decline", result.text())
	}
}

// A caller that hangs up while the child waits for its answer: the child
// gets a decline and the cancellation, its call ends, and the instance
// serves the next call.
func TestElicitationCallerDisconnects(t *testing.T) {
	d := everythingDaemon(t, time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	resp := streamRequest(t, ctx, d.unix, elicitPath, `{}`, t.TempDir())
	pid := 0
	readEvents(t, resp.Body, func(ev event) {
		if ev.name == wire.StreamInput {
			pid = instancePid(t, d)
			cancel()
		}
	})
	resp.Body.Close()
	waitInstance(t, d, "the abandoned call to end", func(in broker.Instance) bool { return in.InFlight == 0 })
	if r := d.unix.do(t, "POST", "/v1/servers/everything/tools/echo", `{"message":"after"}`, cwdHeader(t.TempDir())...).result(t); r.text() != "Echo: after" {
		t.Errorf("echo after the hang-up = %+v", r)
	}
	if got := instancePid(t, d); pid == 0 || got != pid {
		t.Errorf("child pid %d after the hang-up, %d before: want the same child serving on", got, pid)
	}
}

// instancePid is the pid of d's one instance.
func instancePid(t *testing.T, d *daemon) int {
	t.Helper()
	var doc struct{ Instances []broker.Instance }
	d.unix.do(t, "GET", "/v1/instances", "").decode(t, &doc)
	if len(doc.Instances) != 1 {
		t.Fatalf("instances %+v, want one", doc.Instances)
	}
	return doc.Instances[0].Pid
}
