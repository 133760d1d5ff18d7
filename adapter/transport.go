package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// Info is what a Transport says of itself in initialize's answer.
type Info struct {
	Name, Version string // serverInfo; "" = "mcpx-adapter", "dev"
	Instructions  string // "" = none
}

// Transport is an in-process MCP server over a Namespace, with the
// methods of the pool's session transport (mcp/client's Transport:
// Send, Recv, Close), which it satisfies without importing it. It speaks
// the handshake era: it answers initialize (protocol 2025-11-25, or the
// client's older version when it offers one of the handshake era's), ping,
// tools/list and tools/call, resources/list and resources/read when the
// Namespace implements Resources (its capabilities say so), and
// method-not-found to anything else — server/discover included, so a
// session probing for the stateless era falls back to initialize.
//
// Every request runs on a goroutine of its own; a tools/call's ctx ends on
// notifications/cancelled for its id and on Close. A call whose request
// carries _meta.progressToken reports progress as notifications/progress.
// A Namespace error from CallTool, or params that do not decode, answer
// JSON-RPC -32602 with the error's text; a tool that failed is a result
// with isError.
//
// Concurrency: Send may be called from many goroutines at once, Recv from
// one; Close from any, more than once. Close cancels the calls in flight,
// waits for them to return, then closes the Namespace.
type Transport struct {
	ns   Namespace
	info Info

	out    chan []byte   // messages to the session; Recv takes them
	done   chan struct{} // closed by Close
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup   // the request goroutines
	calls  jsonrpc.InFlight // the tools/call in flight

	closeOnce sync.Once
	closeErr  error // set in closeOnce

	mu     sync.Mutex
	closed bool // guarded by mu; no goroutine starts once set
}

// NewTransport returns a Transport serving ns. The caller hands it to a
// session (mcp/client.Connect); closing it closes ns.
func NewTransport(ns Namespace, info Info) *Transport {
	if info.Name == "" {
		info.Name = "mcpx-adapter"
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Transport{ns: ns, info: info, out: make(chan []byte), done: make(chan struct{}),
		ctx: ctx, cancel: cancel}
}

// ErrClosed is returned by Send and Recv once the Transport is closed.
var ErrClosed = errors.New("adapter transport closed")

// Send takes one message from the session. A request is answered on its
// own goroutine; msg is not retained.
func (t *Transport) Send(ctx context.Context, msg []byte) error {
	select {
	case <-t.done:
		return ErrClosed
	default:
	}
	// A copy: the requests started read their params from it after Send
	// returns, and the caller may reuse msg.
	msg = bytes.Clone(bytes.TrimSpace(msg))
	if err := jsonrpc.Check(msg); err != nil {
		t.answerLater(nil, nil, parseError(err))
		return nil
	}
	if len(msg) > 0 && msg[0] == '[' {
		jsonrpc.Elements(msg, t.take) //nolint:errcheck // an array: checked above
		return nil
	}
	t.take(msg)
	return nil
}

func parseError(err error) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: " + err.Error()}
}

// take handles one message: a request is started, a notification acted
// on, a response (the session answering a request we never send) dropped.
func (t *Transport) take(raw []byte) {
	m, err := jsonrpc.Parse(raw)
	if err != nil {
		t.answerLater(nil, nil, parseError(err))
		return
	}
	switch {
	case m.Method == "":
	case m.ID == nil || jsonrpc.IsNull(m.ID):
		t.notify(m)
	default:
		t.start(m)
	}
}

func (t *Transport) notify(m jsonrpc.Message) {
	if m.Method != jsonrpc.MethodCancelled {
		return // notifications/initialized, roots/list_changed: nothing to do
	}
	t.calls.Cancelled(m.Params)
}

// start runs request m on a goroutine; a tools/call is registered first,
// so that a notifications/cancelled sent right after it finds it.
func (t *Transport) start(m jsonrpc.Message) {
	ctx, cancel := context.WithCancel(t.ctx)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		cancel()
		return
	}
	t.wg.Add(1)
	t.mu.Unlock()
	done := func() {}
	if m.Method == jsonrpc.MethodToolsCall {
		done = t.calls.Add(m.ID, cancel)
	}
	go func() {
		defer t.wg.Done()
		defer cancel()
		defer done()
		result, rerr := t.handle(ctx, m)
		t.answer(m.ID, result, rerr)
	}()
}

func (t *Transport) handle(ctx context.Context, m jsonrpc.Message) (any, *jsonrpc.Error) {
	switch m.Method {
	case jsonrpc.MethodInitialize:
		return t.initialize(m.Params)
	case jsonrpc.MethodPing:
		return struct{}{}, nil
	case jsonrpc.MethodToolsList:
		return t.listTools(ctx)
	case jsonrpc.MethodToolsCall:
		return t.callTool(ctx, m.Params)
	}
	if r, ok := t.ns.(Resources); ok {
		switch m.Method {
		case jsonrpc.MethodResourcesList:
			return listResources(ctx, r)
		case jsonrpc.MethodResourcesRead:
			return readResource(ctx, r, m.Params)
		}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + m.Method}
}

func (t *Transport) initialize(params json.RawMessage) (any, *jsonrpc.Error) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "initialize: params: " + err.Error()}
	}
	version := jsonrpc.LatestHandshake
	if jsonrpc.IsHandshakeVersion(p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	caps := map[string]any{"tools": map[string]any{}}
	if _, ok := t.ns.(Resources); ok {
		caps["resources"] = map[string]any{}
	}
	return initializeResult{ProtocolVersion: version, Capabilities: caps,
		ServerInfo: implementation{t.info.Name, t.info.Version}, Instructions: t.info.Instructions}, nil
}

type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	ServerInfo      implementation `json:"serverInfo"`
	Instructions    string         `json:"instructions,omitempty"`
}

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// answer hands the session the response to id, unless the transport
// closed first.
func (t *Transport) answer(id json.RawMessage, result any, rerr *jsonrpc.Error) {
	if rerr == nil {
		res, err := json.Marshal(result)
		if err == nil {
			t.emit(jsonrpc.AppendResult(nil, id, res))
			return
		}
		rerr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the answer: " + err.Error()}
	}
	t.emit(jsonrpc.AppendError(nil, id, rerr))
}

// answerLater answers on a goroutine: Send must not wait for Recv.
func (t *Transport) answerLater(id json.RawMessage, result any, rerr *jsonrpc.Error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.wg.Go(func() { t.answer(id, result, rerr) })
}

// emit hands b to Recv, or drops it once the transport is closed.
func (t *Transport) emit(b []byte) {
	select {
	case t.out <- b:
	case <-t.done:
	}
}

// Recv returns the next message for the session.
func (t *Transport) Recv() ([]byte, error) {
	select {
	case b := <-t.out:
		return b, nil
	case <-t.done:
		return nil, ErrClosed
	}
}

// Close ends the transport: Recv and Send return, the calls in flight are
// cancelled and waited for, and the Namespace is closed. Later calls
// return what the first did.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		close(t.done)
		t.cancel()
		t.wg.Wait()
		t.closeErr = t.ns.Close()
	})
	return t.closeErr
}
