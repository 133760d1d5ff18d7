package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// FuzzStdioFraming: whatever a child writes to its stdout, the stdio
// transport returns only whole, valid JSON messages within the limit,
// without their newline, reports the rest as protocol or too-large
// errors, and reaches the end of the input.
func FuzzStdioFraming(f *testing.F) {
	for _, s := range wireSeeds {
		f.Add([]byte(s + "\n" + s))
	}
	f.Add([]byte("not json\n{\"id\":1,\"result\":{}}\n"))
	f.Add([]byte(`{"id":7,"result":"` + string(bytes.Repeat([]byte("x"), 200)) + "\"}\n{\"id\":8}\n"))
	f.Add([]byte("\n\n  \n{\"a\":1}"))
	f.Add([]byte("{\"method\":\"x\",\"params\":\"" + string(bytes.Repeat([]byte("y"), 100)) + "\"}"))
	const limit = 64
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := NewStdio(bytes.NewReader(data), nopWriteCloser{io.Discard}).(*stdio)
		tr.setMaxMessage(limit)
		for range len(data) + 2 {
			msg, err := tr.Recv()
			var tooLarge *TooLargeError
			var proto *ProtocolError
			switch {
			case errors.Is(err, io.EOF):
				return
			case errors.As(err, &tooLarge), errors.As(err, &proto):
				continue
			case err != nil:
				t.Fatalf("Recv: %v", err)
			}
			if len(msg) > limit || bytes.IndexByte(msg, '\n') >= 0 || !json.Valid(msg) {
				t.Fatalf("Recv returned %q: over the limit, holding a newline, or not JSON", msg)
			}
		}
		t.Fatalf("no end after %d Recv calls on %d bytes", len(data)+2, len(data))
	})
}

// scripted is a transport whose child answers initialize, then, once the
// session's first call is sent, says msgs and hangs up.
type scripted struct {
	msgs   [][]byte
	called chan struct{} // closed at the first tools/call
	once   sync.Once
	recv   chan []byte
}

func (s *scripted) Send(_ context.Context, msg []byte) error {
	e, err := jsonrpc.Parse(msg)
	if err != nil {
		return err
	}
	switch e.Method {
	case "initialize":
		s.recv <- []byte(`{"jsonrpc":"2.0","id":` + string(e.ID) + `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fuzz","version":"1"}}}`)
	case "tools/call":
		s.once.Do(func() { close(s.called) })
	}
	return nil
}

func (s *scripted) Recv() ([]byte, error) {
	select {
	case m := <-s.recv:
		return m, nil
	case <-s.called:
	}
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

func (s *scripted) Close() error { return nil }

// FuzzRouter: whatever messages a child sends while a call is in flight
// (responses with any id, requests, notifications, batches, garbage), the
// session's router neither panics nor strands the call: it returns once
// the child hangs up.
func FuzzRouter(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1}}` + "\n" + `{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"r","method":"roots/list"}` + "\n" + `[{"jsonrpc":"2.0","id":2,"result":{}},{"id":9,"result":1}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `{"id":2,"error":"bad"}`))
	f.Add([]byte(`{}` + "\n" + `[]` + "\n" + `"x"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var msgs [][]byte
		for _, line := range bytes.Split(data, []byte("\n")) {
			if json.Valid(line) { // Recv's contract: only valid JSON (FuzzStdioFraming)
				msgs = append(msgs, line)
			}
		}
		tr := &scripted{msgs: msgs, called: make(chan struct{}), recv: make(chan []byte, 1)}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := Connect(ctx, tr, Options{Era: EraHandshake}) // no server/discover probe: scripted answers only initialize
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer s.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.CallTool(ctx, "t", json.RawMessage(`{}`), func(json.RawMessage) {})
		}()
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatalf("the call was stranded by %q", data)
		}
	})
}
