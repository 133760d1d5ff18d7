package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/mcp/client"
)

// pipeTransport is a third transport, written from transport.go alone,
// outside the package: newline-delimited messages over two io.Pipes to a
// peer in this process. It has Transport's three methods and no Extras.
type pipeTransport struct {
	mu sync.Mutex // serialises Send
	w  *io.PipeWriter
	r  *bufio.Reader
	rc *io.PipeReader

	// breakNext makes the next Send fail as a stream left half-written.
	breakNext atomic.Bool
}

func (t *pipeTransport) Send(ctx context.Context, msg []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.breakNext.Swap(false) {
		return fmt.Errorf("%w: the test cut the pipe mid-message", client.ErrBroken)
	}
	line := append(append(make([]byte, 0, len(msg)+1), msg...), '\n') // msg is not retained
	_, err := t.w.Write(line)
	return err
}

func (t *pipeTransport) Recv() ([]byte, error) {
	for {
		line, err := t.r.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return nil, &client.ProtocolError{Line: line, Reason: "a line that is not JSON"}
		}
		return line, nil
	}
}

func (t *pipeTransport) Close() error {
	t.w.Close()  // the peer sees EOF
	t.rc.Close() // unblocks Recv
	return nil
}

// startDemo runs the built-in demo server in this process and returns a
// pipeTransport to it. The server is gone when the test ends: it stops at
// the EOF the transport's Close sends.
func startDemo(t *testing.T) *pipeTransport {
	t.Helper()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- demo.Run(context.Background(), toServer, fromServer)
		fromServer.Close()
	}()
	t.Cleanup(func() {
		fromClient.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("the demo server: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the demo server did not stop at EOF")
		}
	})
	return &pipeTransport{w: fromClient, r: bufio.NewReader(toClient), rc: toClient}
}

// TestThirdTransport: a transport with only Transport's three methods runs
// a session in both eras against a real server: tools, a call with
// progress, the server's own roots/list request, and an elicitation routed
// to the call it belongs to. It needs nothing else from the package.
func TestThirdTransport(t *testing.T) {
	for _, era := range []string{client.EraStateless, client.EraHandshake} {
		t.Run(era, func(t *testing.T) {
			tr := startDemo(t)
			if _, ok := any(tr).(client.Extended); ok {
				t.Fatal("the test transport offers Extras; it must have only the three methods")
			}
			s, err := client.Connect(t.Context(), tr, client.Options{Root: "/srv/app", Era: era})
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer s.Close()
			if s.Era() != era {
				t.Errorf("Era = %q, want %q", s.Era(), era)
			}
			tools, err := s.Tools(t.Context())
			if err != nil || !strings.Contains(string(tools), `"echo"`) {
				t.Fatalf("Tools = %.200s, %v", tools, err)
			}
			if got := callText(t, s, t.Context(), "echo", `{"message":"hi"}`, nil); got != "hi" {
				t.Errorf("echo = %q", got)
			}
			var notes atomic.Int32
			if got := callText(t, s, t.Context(), "progress", `{"steps":3}`, func(json.RawMessage) { notes.Add(1) }); got != "done 3" || notes.Load() != 3 {
				t.Errorf("progress = %q with %d notifications, want done 3 with 3", got, notes.Load())
			}
			if got := callText(t, s, t.Context(), "roots", `{}`, nil); !strings.Contains(got, "file:///srv/app") {
				t.Errorf("roots = %q, want the session's root", got)
			}
			ctx := client.WithInputHandler(t.Context(), func(context.Context, client.InputRequest) (json.RawMessage, error) {
				return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
			})
			if got := callText(t, s, ctx, "ask", `{"question":"who?"}`, nil); !strings.Contains(got, "Ada") {
				t.Errorf("ask = %q, want the accepted answer", got)
			}
		})
	}
}

// TestThirdTransportBrokenSend: a Send error that wraps ErrBroken ends the
// session, as the contract says, for a transport outside the package too.
func TestThirdTransportBrokenSend(t *testing.T) {
	tr := startDemo(t)
	s, err := client.Connect(t.Context(), tr, client.Options{Era: client.EraHandshake})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer s.Close()
	tr.breakNext.Store(true)
	if _, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"hi"}`), nil); !errors.Is(err, client.ErrBroken) {
		t.Fatalf("call over a broken stream: err = %v, want ErrBroken", err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end after a broken Send")
	}
	if err := s.Err(); !errors.Is(err, client.ErrClosed) || !errors.Is(err, client.ErrBroken) {
		t.Errorf("Err = %v, want ErrClosed and the broken stream", err)
	}
}

// callText calls tool and returns its first text content.
func callText(t *testing.T, s *client.Session, ctx context.Context, tool, args string, onProgress func(json.RawMessage)) string {
	t.Helper()
	res, err := s.CallTool(ctx, tool, json.RawMessage(args), onProgress)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var r struct{ Content []struct{ Text string } }
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("%s: result %s: %v", tool, res, err)
	}
	return r.Content[0].Text
}
