package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mcpx.dev/mcpx/adapter"
	"mcpx.dev/mcpx/mcp/client"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// fakeNS is a Namespace with resources: echo, progress (three steps), wait
// (until its ctx ends, then says how it ended) and a failing tool.
type fakeNS struct {
	closed    atomic.Int32
	cancelled chan string // wait's ctx ended: the reason
	waiting   chan struct{}
}

func newFakeNS() *fakeNS {
	return &fakeNS{cancelled: make(chan string, 4), waiting: make(chan struct{}, 4)}
}

func (f *fakeNS) ListTools(context.Context) ([]adapter.Tool, error) {
	return []adapter.Tool{
		{Name: "echo", Description: "says it back", InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)},
		{Name: "progress"},
		{Name: "wait", OutputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "fail"},
	}, nil
}

func (f *fakeNS) CallTool(ctx context.Context, c adapter.Call) (*adapter.Result, error) {
	switch c.Name {
	case "echo":
		var a struct{ Message string }
		json.Unmarshal(c.Arguments, &a)
		return &adapter.Result{Content: []adapter.Content{{Type: "text", Text: a.Message}}, StructuredContent: json.RawMessage(`{"said":` + fmt.Sprintf("%q", a.Message) + `}`)}, nil
	case "progress":
		for i := 1; i <= 3; i++ {
			c.Progress(float64(i), 3, fmt.Sprintf("step %d", i))
		}
		return adapter.TextResult("done 3", false), nil
	case "wait":
		f.waiting <- struct{}{}
		<-ctx.Done()
		f.cancelled <- ctx.Err().Error()
		return adapter.TextResult("stopped", true), nil
	case "fail":
		return adapter.TextResult("it broke", true), nil
	}
	return nil, fmt.Errorf("unknown tool %q", c.Name)
}

func (f *fakeNS) Close() error { f.closed.Add(1); return nil }

func (f *fakeNS) ListResources(context.Context) ([]adapter.Resource, error) {
	return []adapter.Resource{{URI: "fake://a", Name: "a", MimeType: "text/plain"}, {URI: "fake://b"}}, nil
}

func (f *fakeNS) ReadResource(_ context.Context, uri string) ([]adapter.ResourceContents, error) {
	switch uri {
	case "fake://a":
		return []adapter.ResourceContents{{URI: uri, MimeType: "text/plain", Text: "alpha"}}, nil
	case "fake://b":
		return []adapter.ResourceContents{{URI: uri, Blob: []byte{0, 1, 2}}}, nil
	}
	return nil, fmt.Errorf("no resource %q", uri)
}

// toolsOnly hides fakeNS's resources.
type toolsOnly struct{ *fakeNS }

func (toolsOnly) ListResources() {} // not adapter.Resources' signature

func connect(t *testing.T, ns adapter.Namespace, era string) (*client.Session, *adapter.Transport) {
	t.Helper()
	tr := adapter.NewTransport(ns, adapter.Info{Name: "fake", Version: "1"})
	var _ client.Transport = tr
	s, err := client.Connect(t.Context(), tr, client.Options{Era: era})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, tr
}

// TestSession: a real session over the Transport in either era it may be
// opened with (the stateless probe is refused and falls back): tools with
// their schemas, a call with structured content, progress, an isError
// result, an unknown tool and bad arguments as JSON-RPC errors, and the
// resources.
func TestSession(t *testing.T) {
	for _, era := range []string{client.EraStateless, client.EraHandshake} {
		t.Run(era, func(t *testing.T) {
			ns := newFakeNS()
			s, _ := connect(t, ns, era)
			if s.Era() != client.EraHandshake || s.ProtocolVersion() != "2025-11-25" {
				t.Errorf("era %s, version %s; want the handshake era at 2025-11-25", s.Era(), s.ProtocolVersion())
			}
			if !strings.Contains(string(s.InitializeResult()), `"resources":{}`) {
				t.Errorf("initialize = %s, want the resources capability", s.InitializeResult())
			}
			tools, err := s.Tools(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"name":"echo"`, `"properties":{"message":{"type":"string"}}`, `"name":"progress","inputSchema":{"type":"object"}`, `"outputSchema":{"type":"object"}`} {
				if !strings.Contains(string(tools), want) {
					t.Errorf("tools/list = %s, want %s", tools, want)
				}
			}
			res, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"hi"}`), nil)
			if err != nil || string(res) != `{"content":[{"type":"text","text":"hi"}],"structuredContent":{"said":"hi"}}` {
				t.Errorf("echo = %s, %v", res, err)
			}
			var notes atomic.Int32
			res, err = s.CallTool(t.Context(), "progress", nil, func(p json.RawMessage) {
				if strings.Contains(string(p), `"total":3`) && strings.Contains(string(p), `"message":"step`) {
					notes.Add(1)
				}
			})
			if err != nil || !strings.Contains(string(res), "done 3") || notes.Load() != 3 {
				t.Errorf("progress = %s, %v with %d notifications, want 3", res, err, notes.Load())
			}
			if res, err := s.CallTool(t.Context(), "fail", nil, nil); err != nil || !strings.Contains(string(res), `"isError":true`) {
				t.Errorf("fail = %s, %v; want an isError result", res, err)
			}
			var rpc *jsonrpc.Error
			if _, err := s.CallTool(t.Context(), "nope", nil, nil); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, `"nope"`) {
				t.Errorf("unknown tool: %v; want -32602 naming it", err)
			}
			if _, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"echo","arguments":[1]}`), nil); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("array arguments: %v; want -32602", err)
			}
			if _, err := s.Call(t.Context(), "prompts/list", nil, nil); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
				t.Errorf("prompts/list: %v; want -32601", err)
			}
			if err := s.Ping(t.Context()); err != nil {
				t.Errorf("ping: %v", err)
			}
			list, err := s.Call(t.Context(), "resources/list", nil, nil)
			if err != nil || !strings.Contains(string(list), `{"uri":"fake://b","name":"fake://b"}`) {
				t.Errorf("resources/list = %s, %v", list, err)
			}
			read, err := s.Call(t.Context(), "resources/read", json.RawMessage(`{"uri":"fake://b"}`), nil)
			if err != nil || string(read) != `{"contents":[{"uri":"fake://b","blob":"AAEC"}]}` {
				t.Errorf("resources/read b = %s, %v", read, err)
			}
			read, err = s.Call(t.Context(), "resources/read", json.RawMessage(`{"uri":"fake://a"}`), nil)
			if err != nil || string(read) != `{"contents":[{"uri":"fake://a","mimeType":"text/plain","text":"alpha"}]}` {
				t.Errorf("resources/read a = %s, %v", read, err)
			}
		})
	}
}

// TestNoResources: a Namespace without resources declares none and
// answers resources/list with method-not-found.
func TestNoResources(t *testing.T) {
	s, _ := connect(t, toolsOnly{newFakeNS()}, client.EraHandshake)
	if strings.Contains(string(s.InitializeResult()), "resources") {
		t.Errorf("initialize = %s, want no resources capability", s.InitializeResult())
	}
	var rpc *jsonrpc.Error
	if _, err := s.Call(t.Context(), "resources/list", nil, nil); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("resources/list: %v; want -32601", err)
	}
}

// TestCancel: a call whose caller gives up has its ctx cancelled (the
// session sends notifications/cancelled), and Close cancels what is still
// running, waits for it, and closes the Namespace once.
func TestCancel(t *testing.T) {
	ns := newFakeNS()
	s, tr := connect(t, ns, client.EraHandshake)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { _, err := s.CallTool(ctx, "wait", nil, nil); errc <- err }()
	<-ns.waiting
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	select {
	case why := <-ns.cancelled:
		if why != context.Canceled.Error() {
			t.Errorf("the call ended with %q", why)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("notifications/cancelled did not reach the call")
	}

	go func() { _, err := s.CallTool(t.Context(), "wait", nil, nil); errc <- err }()
	<-ns.waiting
	s.Close()
	if err := <-errc; !errors.Is(err, client.ErrClosed) {
		t.Errorf("call at Close: %v", err)
	}
	select {
	case <-ns.cancelled:
	default:
		t.Error("Close returned before the call it cancelled had ended")
	}
	tr.Close()
	if n := ns.closed.Load(); n != 1 {
		t.Errorf("Namespace closed %d times, want once", n)
	}
	if err := tr.Send(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)); !errors.Is(err, adapter.ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
}
