package mcp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

func TestHTTPErrorIsAJSONRPCError(t *testing.T) {
	w := httptest.NewRecorder()
	httpError(w, http.StatusNotFound, "no such session")
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || r.Error.Message != "no such session" || string(r.ID) != "null" {
		t.Fatalf("body %s: %+v, %v", w.Body, r, err)
	}
	if w.Code != http.StatusNotFound || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("status %d, content type %q", w.Code, w.Header().Get("Content-Type"))
	}
}
