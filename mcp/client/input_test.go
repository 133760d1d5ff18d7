package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// startCall runs CallTool on s with h as its input handler; the result
// arrives on the returned channel.
func startCall(t *testing.T, s *Session, ctx context.Context, h InputHandler) <-chan callResult {
	t.Helper()
	ch := make(chan callResult, 1)
	go func() {
		res, err := s.CallTool(WithInputHandler(ctx, h), "ask", nil, nil)
		ch <- callResult{res, err}
	}()
	return ch
}

func TestInputReachesTheCallsHandler(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	got := make(chan InputRequest, 1)
	ch := startCall(t, s, t.Context(), func(ctx context.Context, req InputRequest) (json.RawMessage, error) {
		got <- req
		return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
	})
	p.expect(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask"}}`)
	p.send(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`)
	p.expect(`{"jsonrpc":"2.0","id":"e1","result":{"action":"accept","content":{"name":"Ada"}}}`)
	req := <-got
	if req.Method != jsonrpc.MethodElicit || !strings.Contains(string(req.Params), `"message":"name?"`) {
		t.Errorf("handler got %s %s", req.Method, req.Params)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`)
	if r := <-ch; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestInputRefused(t *testing.T) {
	tests := []struct {
		name    string
		h       InputHandler
		method  string
		want    string
		twoCall bool
	}{
		{"no handler: elicitation declined", nil, jsonrpc.MethodElicit, `{"jsonrpc":"2.0","id":9,"result":{"action":"decline"}}`, false},
		{"no handler: sampling an error", nil, jsonrpc.MethodSample,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-1,"message":"sampling request declined: mcpx cannot ask the caller: it is not streaming the call, so it cannot be asked for input"}}`, false},
		{"handler fails", func(context.Context, InputRequest) (json.RawMessage, error) {
			return nil, errors.New("no answer in time")
		},
			jsonrpc.MethodSample, `{"jsonrpc":"2.0","id":9,"error":{"code":-1,"message":"sampling request declined: no answer in time"}}`, false},
		{"handler returns no JSON", func(context.Context, InputRequest) (json.RawMessage, error) { return json.RawMessage("{"), nil },
			jsonrpc.MethodElicit, `{"jsonrpc":"2.0","id":9,"result":{"action":"decline"}}`, false},
		{"two calls in flight: ambiguous", func(context.Context, InputRequest) (json.RawMessage, error) {
			return json.RawMessage(`{"action":"accept","content":{}}`), nil
		}, jsonrpc.MethodSample, `{"jsonrpc":"2.0","id":9,"error":{"code":-1,"message":"sampling request declined: mcpx cannot tell which caller to ask: several calls are in flight and the request names none"}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPeer(t)
			s := p.connect(Options{}, "2025-11-25")
			ch := startCall(t, s, t.Context(), tt.h)
			p.recv() // tools/call id 2
			var ch2 <-chan callResult
			if tt.twoCall {
				ch2 = startCall(t, s, t.Context(), tt.h)
				p.recv() // tools/call id 3
			}
			p.send(`{"jsonrpc":"2.0","id":9,"method":"` + tt.method + `","params":{}}`)
			p.expect(tt.want)
			p.send(`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`)
			if r := <-ch; r.err != nil {
				t.Fatal(r.err)
			}
			if ch2 != nil {
				p.send(`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`)
				if r := <-ch2; r.err != nil {
					t.Fatal(r.err)
				}
			}
		})
	}
}

// A caller that goes away while its handler waits: the handler's context
// ends, the child gets its decline and the call's cancellation.
func TestInputCallerGone(t *testing.T) {
	p := newPeer(t)
	s := p.connect(Options{}, "2025-11-25")
	ctx, cancel := context.WithCancel(t.Context())
	waiting := make(chan struct{})
	ch := startCall(t, s, ctx, func(ctx context.Context, req InputRequest) (json.RawMessage, error) {
		close(waiting)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	p.recv() // tools/call id 2
	p.send(`{"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{"message":"?"}}`)
	<-waiting
	cancel()
	if r := <-ch; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("call error = %v, want context.Canceled", r.err)
	}
	// The two messages leave on different goroutines: either order.
	got := []string{p.recv(), p.recv()}
	want := map[string]bool{
		`{"jsonrpc":"2.0","id":5,"result":{"action":"decline"}}`:                                                        true,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the caller went away"}}`: true,
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("client sent %s; want the decline and the cancellation", g)
		}
		delete(want, g)
	}
}

func TestSamplingCapability(t *testing.T) {
	b, err := initializeParams("2025-11-25", Options{Sampling: true})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}},"sampling":{}},"clientInfo":{"name":"mcpx","version":"dev"}}`
	if string(b) != want {
		t.Errorf("initialize params\n%s\nwant\n%s", b, want)
	}
}

// Over streamable HTTP a request for input comes on the answer stream of
// the call it belongs to, so two calls in flight on one session each get
// their own question: the demo's ask tool, served by the go-sdk.
func TestHTTPInputGoesToItsOwnCall(t *testing.T) {
	h := startHTTP(t, nil)
	s := connectHTTP(t, h, Options{})
	type outcome struct {
		who string
		res json.RawMessage
		err error
	}
	out := make(chan outcome, 2)
	both := make(chan struct{}) // closed once both calls have been asked
	var asked sync.WaitGroup
	asked.Add(2)
	go func() { asked.Wait(); close(both) }()
	for _, who := range []string{"Ada", "Grace"} {
		go func() {
			ctx := WithInputHandler(t.Context(), func(ctx context.Context, req InputRequest) (json.RawMessage, error) {
				if !strings.Contains(string(req.Params), `"message":"`+who+`?"`) {
					return nil, fmt.Errorf("%s's handler got %s", who, req.Params)
				}
				asked.Done()
				<-both // both questions are open at once: neither is the only call in flight
				return json.RawMessage(`{"action":"accept","content":{"name":"` + who + `"}}`), nil
			})
			res, err := s.CallTool(ctx, "ask", json.RawMessage(`{"question":"`+who+`?"}`), nil)
			out <- outcome{who, res, err}
		}()
	}
	for range 2 {
		o := <-out
		if o.err != nil {
			t.Fatalf("%s: %v", o.who, o.err)
		}
		// The go-sdk fills in the form's defaults (colour).
		if got := toolText(t, o.res); !strings.HasPrefix(got, "accept ") || !strings.Contains(got, `"name":"`+o.who+`"`) {
			t.Errorf("%s's call returned %q", o.who, got)
		}
	}
}
