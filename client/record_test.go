package client_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// TestRecordWrittenAfterTheFirstRequest: a daemon answers on its listeners a
// moment before its record (and so its token) is on disk. A client that
// found no record sends no token, gets a 401, reads the record again and
// retries once with the token it now finds — the caller sees one success.
// A 401 with the same record is not retried.
func TestRecordWrittenAfterTheFirstRequest(t *testing.T) {
	state := t.TempDir()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get(wire.HeaderAuthorization) == "Bearer fresh" {
			w.Header().Set("Content-Type", wire.MediaJSON)
			w.Write([]byte(`{"caller":{"name":"owner","via":"tcp-loopback","local":false,"owner":true,"admin":true}}`))
			return
		}
		// The daemon's record lands while this request is answered.
		var rec wire.DaemonRecord
		rec.Address, rec.Token = r.Host, "fresh"
		b, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(state, wire.RecordFile), b, 0o600); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"type":"https://mcpx.dev/problems/unauthorized","title":"Unauthorized","status":401}`))
	}))
	defer srv.Close()

	c := client.New(srv.URL, client.Options{StateDir: state})
	if _, _, err := c.Whoami(t.Context(), client.Caller{}); err != nil {
		t.Fatalf("whoami: %v, want a success after one retry", err)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (one without a token, one retry with the record's)", n)
	}

	// The record does not change: a 401 is the answer, with no retry.
	requests.Store(0)
	other := client.New(srv.URL, client.Options{StateDir: state, Token: "wrong"})
	if _, _, err := other.Whoami(t.Context(), client.Caller{}); err == nil {
		t.Error("a wrong explicit token succeeded")
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("explicit token: %d requests, want 1 (never retried)", n)
	}
}

// TestForwardReauthorizes: Forward (the relay's and `mcpx mcp`'s request)
// retries a 401 as Do does, body and all, when the record's token changed
// (a restarted daemon).
func TestForwardReauthorizes(t *testing.T) {
	state := t.TempDir()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(wire.HeaderAuthorization) == "Bearer fresh" {
			w.Write(body)
			return
		}
		var rec wire.DaemonRecord
		rec.Address, rec.Token = r.Host, "fresh"
		b, _ := json.Marshal(rec)
		os.WriteFile(filepath.Join(state, wire.RecordFile), b, 0o600)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	c := client.New(srv.URL, client.Options{StateDir: state})
	resp, err := c.Forward(t.Context(), http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(got) != `{"jsonrpc":"2.0"}` {
		t.Errorf("forwarded: %s %q, want 200 with the body sent again", resp.Status, got)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}
