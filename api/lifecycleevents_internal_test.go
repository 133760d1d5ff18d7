package api

import (
	"testing"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/pool"
)

// TestEventForCaller: the owner sees an event whole; other callers only
// the servers they may use, no path, no reason but a restart's, and
// without admin rights no key or pid of instances not theirs.
func TestEventForCaller(t *testing.T) {
	restart := broker.Event{ID: 7, Kind: pool.EventRestart, Server: "a", Key: "worktree:/src/x", Instance: "a-1", Pid: 42,
		Reason: "executable changed", Path: "/opt/bin/a"}
	crash := broker.Event{ID: 8, Kind: pool.EventCrash, Server: "a", Key: "session:@tailnet:bob/s1", Pid: 43, Reason: "exit 1: /secret/path"}
	owner := broker.Caller{Owner: true, Rights: rights.Rights{{}}}
	bob := broker.Caller{Name: "bob", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"a"}}}}
	admin := broker.Caller{Name: "root", Rights: rights.Rights{{Admin: true, Servers: []string{"a"}}}}
	carol := broker.Caller{Name: "carol", Rights: rights.Rights{{Servers: []string{"b"}}}}

	if doc, ok := eventFor(owner, restart); !ok || doc.Path != restart.Path || doc.Key != restart.Key || doc.Pid != 42 {
		t.Errorf("owner: %+v, %v", doc, ok)
	}
	if _, ok := eventFor(carol, restart); ok {
		t.Error("a caller without server a sees its events")
	}
	doc, ok := eventFor(bob, restart)
	if !ok || doc.Path != "" || doc.Reason != "executable changed" || doc.Key != "" || doc.Pid != 0 || doc.Instance != "a-1" {
		t.Errorf("bob, another's instance: %+v, %v", doc, ok)
	}
	doc, _ = eventFor(bob, crash)
	if doc.Reason != "" || doc.Key != crash.Key || doc.Pid != 43 {
		t.Errorf("bob, his own session's crash: %+v; want key and pid, no reason", doc)
	}
	doc, _ = eventFor(admin, restart)
	if doc.Key != restart.Key || doc.Pid != 42 || doc.Path != "" {
		t.Errorf("admin: %+v; want key and pid, no path", doc)
	}
	if _, ok := eventFor(carol, broker.Event{Kind: pool.EventReload}); !ok {
		t.Error("a reload (no server) is hidden from a caller")
	}
}

// TestStderrTailIsTheOwners: a crash's stderr tail, on its event and on the
// instance, reaches the daemon's owner only: an admin that is not the
// owner sees neither.
func TestStderrTailIsTheOwners(t *testing.T) {
	const tail = "panic: open /home/owner/.secret: permission denied"
	crash := broker.Event{ID: 9, Kind: pool.EventCrash, Server: "a", Key: "global", StderrTail: tail}
	in := broker.Instance{ID: "a-1", Server: "a", Key: "global", LastError: "exit 2", StderrTail: tail}
	owner := broker.Caller{Name: "loopback", Owner: true, Rights: rights.All()}
	admin := broker.Caller{Name: "root", Rights: rights.Rights{{Admin: true, Servers: []string{"a"}}}}
	if doc, _ := eventFor(owner, crash); doc.StderrTail != tail {
		t.Errorf("owner's crash event: stderrTail %q, want %q", doc.StderrTail, tail)
	}
	if doc, _ := instanceFor(owner, in); doc.StderrTail != tail {
		t.Errorf("owner's instance: stderrTail %q, want %q", doc.StderrTail, tail)
	}
	if doc, _ := eventFor(admin, crash); doc.StderrTail != "" {
		t.Errorf("an admin's crash event carries the stderr tail %q", doc.StderrTail)
	}
	if doc, _ := instanceFor(admin, in); doc.StderrTail != "" {
		t.Errorf("an admin's instance carries the stderr tail %q", doc.StderrTail)
	}
}

// TestToolDiffIsTheOwners: a tool event's tool, change, hashes and flags
// go to every caller of the server; its diff to the owner only.
func TestToolDiffIsTheOwners(t *testing.T) {
	ev := broker.Event{ID: 9, Kind: pool.EventToolChanged, Server: "a", Tool: "echo", Change: "changed",
		OldHash: "h1", NewHash: "h2", Flags: []string{"hidden-tag"}, Diff: "-old\n+new"}
	owner := broker.Caller{Owner: true, Rights: rights.Rights{{}}}
	bob := broker.Caller{Name: "bob", Via: "tailnet", Rights: rights.Rights{{Servers: []string{"a"}, Admin: true}}}
	if doc, _ := eventFor(owner, ev); doc.Diff != ev.Diff || doc.Tool != "echo" || doc.NewHash != "h2" {
		t.Errorf("owner: %+v", doc)
	}
	doc, ok := eventFor(bob, ev)
	if !ok || doc.Diff != "" || doc.Tool != "echo" || doc.Change != "changed" || doc.OldHash != "h1" || len(doc.Flags) != 1 {
		t.Errorf("bob: %+v, %v", doc, ok)
	}
}
