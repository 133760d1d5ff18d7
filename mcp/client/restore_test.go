package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// handedTransport is one process's view of a child's pipes that outlive
// it: the lines of the child's stdout arrive on lines, shared by the
// sessions that take turns; Close ends this view only.
type handedTransport struct {
	lines <-chan []byte
	w     io.Writer
	wmu   *sync.Mutex
	done  chan struct{}
	once  sync.Once
	sent  []string // guarded by wmu
}

func (t *handedTransport) Send(_ context.Context, msg []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.sent = append(t.sent, string(msg))
	_, err := t.w.Write(append(msg, '\n'))
	return err
}

func (t *handedTransport) Recv() ([]byte, error) {
	select {
	case l := <-t.lines:
		return l, nil
	case <-t.done:
		return nil, io.EOF
	}
}

func (t *handedTransport) Close() error { t.once.Do(func() { close(t.done) }); return nil }

// TestRestoreGoesOnWithTheChild: a session restored from a snapshot over
// the same child's pipes sends no initialize, goes on from the last id,
// and finds the child as it was (its counter counts on).
func TestRestoreGoesOnWithTheChild(t *testing.T) {
	proctest.CheckNoLeaks(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), demo.EnvServer+"=1", "GORACE=atexit_sleep_ms=0")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	lines := make(chan []byte)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	var wmu sync.Mutex
	view := func() *handedTransport {
		return &handedTransport{lines: lines, w: stdin, wmu: &wmu, done: make(chan struct{})}
	}
	count := func(s *Session) string {
		t.Helper()
		res, err := s.CallTool(t.Context(), "counter", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return toolText(t, res)
	}

	first, err := Connect(t.Context(), view(), Options{Root: t.TempDir(), Era: EraHandshake})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := count(first), count(first); a != "1" || b != "2" {
		t.Fatalf("counted %s, %s", a, b)
	}
	snap := first.Snapshot()
	first.Close()
	b, err := json.Marshal(snap) // it goes through the handoff state file
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}

	tr := view()
	second, err := Restore(tr, Options{Root: t.TempDir()}, back)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if got := count(second); got != "3" {
		t.Errorf("the restored session counted %s, want 3: the child's state is gone", got)
	}
	if second.ProtocolVersion() != first.ProtocolVersion() || string(second.InitializeResult()) != string(first.InitializeResult()) {
		t.Errorf("restored %s %s, want %s %s", second.ProtocolVersion(), second.InitializeResult(), first.ProtocolVersion(), first.InitializeResult())
	}
	wmu.Lock()
	sent := tr.sent
	wmu.Unlock()
	if len(sent) != 1 || strings.Contains(sent[0], `"initialize"`) || !strings.Contains(sent[0], `"id":`+jsonInt(back.NextID+1)+`,`) {
		t.Errorf("the restored session sent %q; want one tools/call with id %d, no initialize", sent, back.NextID+1)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// rpcSeen is one HTTP request a recording server got: its HTTP method,
// session id and, for a POST, the JSON-RPC method ("" for an answer).
type rpcSeen struct{ HTTP, Session, RPC string }

// recordingHTTP serves the demo through go-sdk's streamable HTTP handler
// and records what it is sent.
type recordingHTTP struct {
	ts   *httptest.Server
	mu   sync.Mutex
	seen []rpcSeen
}

func startRecordingHTTP(t *testing.T, opts *mcp.StreamableHTTPOptions) *recordingHTTP {
	t.Helper()
	srv := demo.NewServer()
	h := &recordingHTTP{}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
	h.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct{ Method string }
		json.Unmarshal(body, &m)
		h.mu.Lock()
		h.seen = append(h.seen, rpcSeen{r.Method, r.Header.Get("Mcp-Session-Id"), m.Method})
		h.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(h.ts.Close)
	return h
}

// since returns what h was sent from the n-th request on.
func (h *recordingHTTP) since(n int) []rpcSeen {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen[n:])
}

func (h *recordingHTTP) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// handOverHTTP opens a session to h, calls echo, and hands the session
// over as an upgrade does: a snapshot through JSON, and the old session
// dropped without ending it at the server (the old process is gone).
func handOverHTTP(t *testing.T, h *recordingHTTP) Snapshot {
	t.Helper()
	first, err := Connect(t.Context(), NewHTTP(h.ts.URL, nil, h.ts.Client()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"before"}`), nil); err != nil {
		t.Fatal(err)
	}
	snap := first.Snapshot()
	first.x.ForgetSession() // no DELETE: the session lives on at the server
	first.Close()
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// TestRestoreHTTPSession: a streamable HTTP session restored from its
// snapshot over a new transport goes on in the server's session (its
// Mcp-Session-Id on every request) with no initialize, and reopens its GET
// stream; a stateless-era one has no session and sends no server/discover.
func TestRestoreHTTPSession(t *testing.T) {
	for name, tc := range map[string]struct {
		opts *mcp.StreamableHTTPOptions
		era  string
	}{
		"handshake": {&mcp.StreamableHTTPOptions{}, EraHandshake},
		"stateless": {&mcp.StreamableHTTPOptions{Stateless: true}, EraStateless},
	} {
		t.Run(name, func(t *testing.T) {
			h := startRecordingHTTP(t, tc.opts)
			snap := handOverHTTP(t, h)
			if snap.Era != tc.era || (snap.SessionID == "") != (tc.era == EraStateless) {
				t.Fatalf("snapshot %+v; want era %s, a session id in the handshake era only", snap, tc.era)
			}
			n := h.count()
			s, err := Restore(NewHTTP(h.ts.URL, nil, h.ts.Client()), Options{}, snap)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			res, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"after"}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := toolText(t, res); got != "after" {
				t.Errorf("echo = %q", got)
			}
			var calls, gets int
			for _, r := range h.since(n) {
				switch {
				case r.RPC == "initialize" || r.RPC == "server/discover":
					t.Errorf("the restored session sent %s", r.RPC)
				case r.Session != snap.SessionID:
					t.Errorf("%s %s carried session %q, want %q", r.HTTP, r.RPC, r.Session, snap.SessionID)
				case r.RPC == "tools/call":
					calls++
				case r.HTTP == http.MethodGet:
					gets++
				}
			}
			if calls != 1 {
				t.Errorf("%d tools/call at the server, want 1: %+v", calls, h.since(n))
			}
			if tc.era == EraHandshake && gets == 0 {
				// The GET is started by Restore, not waited for: give it
				// the time the call took and some.
				deadline := time.Now().Add(5 * time.Second)
				for gets == 0 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
					for _, r := range h.since(n) {
						if r.HTTP == http.MethodGet {
							gets++
						}
					}
				}
				if gets == 0 {
					t.Error("the restored session did not open its GET stream again")
				}
			}
		})
	}
}

// TestRestoreHTTPSessionExpired: a restored session the server has ended
// meanwhile fails its first call as undelivered (ErrSessionExpired and
// ErrNotDelivered: safe to send again in a new session) and ends, without
// a DELETE for the dead session.
func TestRestoreHTTPSessionExpired(t *testing.T) {
	h, snap := handedOverThenEnded(t)
	n := h.count()
	s, err := Restore(NewHTTP(h.ts.URL, nil, h.ts.Client()), Options{}, snap)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"x"}`), nil)
	if !errors.Is(err, ErrSessionExpired) || !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("CallTool error = %v, want ErrSessionExpired and ErrNotDelivered", err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the expired session did not end")
	}
	s.Close()
	for _, r := range h.since(n) {
		if r.HTTP == http.MethodDelete {
			t.Errorf("a DELETE for the expired session %s", r.Session)
		}
	}
}

// TestRestoreHTTPSessionExpiredSeenFirstByGET: the restored session's GET
// stream can meet the 404 before any call: the session ends, and a call
// made after that was never sent, so it is undelivered too (the pool sends
// it again in a new session), not just "session closed".
func TestRestoreHTTPSessionExpiredSeenFirstByGET(t *testing.T) {
	h, snap := handedOverThenEnded(t)
	s, err := Restore(NewHTTP(h.ts.URL, nil, h.ts.Client()), Options{}, snap)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the GET stream's 404 did not end the restored session")
	}
	_, err = s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"x"}`), nil)
	if !errors.Is(err, ErrSessionExpired) || !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("CallTool error = %v, want ErrSessionExpired and ErrNotDelivered", err)
	}
}

// handedOverThenEnded hands over an HTTP session, then ends it at the
// server (DELETE) before it is restored.
func handedOverThenEnded(t *testing.T) (*recordingHTTP, Snapshot) {
	t.Helper()
	h := startRecordingHTTP(t, &mcp.StreamableHTTPOptions{})
	snap := handOverHTTP(t, h)
	req, _ := http.NewRequest(http.MethodDelete, h.ts.URL, nil)
	req.Header.Set("Mcp-Session-Id", snap.SessionID)
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return h, snap
}
