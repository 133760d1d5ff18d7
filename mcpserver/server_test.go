package mcpserver

import (
	"testing"

	"mcpx.dev/mcpx/broker"
)

func TestSessionsPerCallerAreBounded(t *testing.T) {
	s := &Server{sessions: map[string]*session{}}
	alice := broker.Caller{Name: "alice", Via: "tailnet"}
	for range MaxSessionsPerCaller {
		if err := s.add(&session{id: newID(), caller: alice}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.add(&session{id: newID(), caller: alice}); err != errTooMany {
		t.Fatalf("session %d: %v, want errTooMany", MaxSessionsPerCaller+1, err)
	}
	if err := s.add(&session{id: newID(), caller: broker.Caller{Name: "bob", Via: "tailnet"}}); err != nil {
		t.Fatalf("another caller is refused: %v", err)
	}
}
