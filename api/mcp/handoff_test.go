package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// TestHandoffRestoresSessions: a session handed to the next image (as JSON,
// as the handoff file carries it) answers its id again with all it knew,
// for the caller who opened it only, who brings their rights with their
// first request; the old image's janitor and notices are stopped.
func TestHandoffRestoresSessions(t *testing.T) {
	b, err := broker.New(broker.Options{Config: &config.Config{Servers: map[string]*config.Server{}}, ReapInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	alice := broker.Caller{Name: "alice", Via: "tailnet", Token: "jti-1", Rights: rights.All()}
	old := New(Options{Broker: b})
	rec := httptest.NewRecorder()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true},"elicitation":{}},"clientInfo":{"name":"probe"}}}`
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Content-Type", "application/json")
	old.ServeHTTP(rec, r, Request{Caller: alice, Context: broker.CallContext{Cwd: "/src/app"}})
	id := rec.Header().Get(jsonrpc.HeaderSessionID)
	if rec.Code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	ss := old.sessions[id]
	ss.roots = rootsState{known: true, dirs: []string{"/src/app-wt1"}}
	ss.level = "warning"
	ss.targets["demo\x00worktree:/src/app-wt1"] = true
	ss.remember("demo__echo", "demo", "echo")
	ss.rememberURI("note://1", "demo")
	want := ss.state()

	handed := old.Handoff()
	if old.add(&session{id: "late", caller: alice}) != errClosed {
		t.Error("the old image takes a session after its handoff")
	}
	if n := old.Sessions(); n != 1 {
		t.Errorf("the handoff ended the old image's sessions: %d left", n)
	}
	js, err := json.Marshal(handed)
	if err != nil {
		t.Fatal(err)
	}
	var states []SessionState
	if err := json.Unmarshal(js, &states); err != nil {
		t.Fatal(err)
	}
	next := New(Options{Broker: b})
	defer next.Close(context.Background())
	next.Restore(states)
	if len(states) != 1 || !reflect.DeepEqual(next.sessions[id].state(), want) {
		t.Fatalf("restored %+v\nwant     %+v", states, want)
	}
	got := next.sessions[id]
	if !got.ownSession || got.hdr.Session != "mcp-"+id || !got.caps.roots || !got.caps.elicitForm || got.version != "2025-06-18" {
		t.Errorf("restored session: own %v, session %q, caps %+v, version %q", got.ownSession, got.hdr.Session, got.caps, got.version)
	}
	if got.caller.Rights.MayUse("demo") {
		t.Error("a restored session has rights before its caller's first request")
	}
	if next.lookup(id, Request{Caller: broker.Caller{Name: "bob", Via: "tailnet", Rights: rights.All()}}) != nil {
		t.Error("another caller takes over a restored session")
	}
	if next.lookup(id, Request{Caller: alice, Server: "demo"}) != nil {
		t.Error("a restored /mcp session answers on /mcp/demo")
	}
	if next.lookup(id, Request{Caller: alice}) != got || !got.caller.Rights.MayUse("demo") || got.restored {
		t.Errorf("the caller's first request does not bind the restored session: restored %v", got.restored)
	}
}
