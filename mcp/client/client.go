// Package client is the broker's MCP client session to one child server:
// JSON-RPC 2.0 over a Transport (newline-delimited stdio or streamable HTTP;
// transport.go is the whole contract a transport meets, Extras what it may
// offer besides).
// It passes result bytes through unchanged and multiplexes many concurrent
// callers on one session (each request gets a session-local id). It speaks
// both eras of the protocol: the initialize handshake (2024-11-05 …
// 2025-11-25) and the stateless 2026-07-28 revision (server/discover, the
// _meta protocol keys on every request, input_required rounds); Connect
// probes a stdio child and falls back (era.go, stateless.go).
//
//	s, err := client.Connect(ctx, client.NewStdio(stdout, stdin), client.Options{Root: "/src/app"})
//	res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"message":"hi"}`), nil)
//
// # Requests for input
//
// A child's elicitation/create or sampling/createMessage is handed to the
// InputHandler of the call it belongs to (WithInputHandler on the call's
// context), or refused (InputRefusal) when the call has none or no one call
// can be named (Session.inputTarget has the rule). Elicitation is always
// declared in initialize, sampling with Options.Sampling.
//
//	ctx = client.WithInputHandler(ctx, func(ctx context.Context, req client.InputRequest) (json.RawMessage, error) {
//		return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
//	})
//	res, err := s.CallTool(ctx, "ask", nil, nil)
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/observe/tracing"
)

// Options configure Connect. The zero value is a rootless session offering
// the latest protocol version.
type Options struct {
	ClientName    string // clientInfo.name; "" = "mcpx"
	ClientVersion string // clientInfo.version; "" = "dev"
	// Root is the instance root. Non-empty: declare the roots capability,
	// answer roots/list with [{uri: file://Root, name: base(Root)}] and send
	// rootUri, workspaceFolders and capabilities.workspace.workspaceFolders.
	// Empty: initialize is the rootless one and roots/list answers [].
	Root string
	// Logger receives protocol-level events (nil = discard). The child's
	// notifications/message records are logged to it at their level.
	Logger *slog.Logger
	// MaxMessageBytes bounds one message from the child (a stdio line, a
	// JSON body, an SSE event); 0 = DefaultMaxMessageBytes. A larger
	// message fails the call it answers with a *TooLargeError; a stdio
	// line that crosses the limit before its newline also ends the session.
	MaxMessageBytes int
	// OnList, if set, is told each listing fetched from the child (all
	// pages joined, as Tools and the like return it) with its method
	// (tools/list, prompts/list, resources/list, resources/templates/list);
	// OnListChanged, each list_changed notification as the method of the
	// list it invalidated. OnListChanged runs on the session's reader: it
	// must not block or call the session. The pool keeps its schema cache
	// with them.
	OnList        func(method string, list json.RawMessage)
	OnListChanged func(method string)
	// OnNotify, if set, is told every notification from the child but
	// progress (which goes to its call): list_changed, notifications/message,
	// notifications/resources/updated and any other, with its params as
	// sent, after the session's own handling. Like OnListChanged it runs on
	// the session's reader and must not block or call the session.
	OnNotify func(method string, params json.RawMessage)
	// RootsMemo, with a Root, makes Connect wait after initialize for the
	// child's start-up roots/list and let its answer settle, so that the
	// first call already sees the root; the memo learns whether the
	// server's children ask at all (nil = no wait). RootsWait bounds the
	// wait: 0 = DefaultRootsWait, negative = no wait.
	RootsMemo *RootsMemo
	RootsWait time.Duration
	// RootsSignalled: the caller waits after Connect for the child's own
	// word that it is ready (the pool's ready.stderr), so Connect does
	// not guess with a settle once the start-up roots/list is answered.
	RootsSignalled bool
	// Sampling declares the sampling client capability: the caller path
	// can answer sampling/createMessage (a config's per-server
	// "sampling": true). Elicitation is always declared, since a decline
	// is always a valid answer; a refused sampling request is an error,
	// which many servers treat as a failure, so it is declared only when
	// asked for.
	Sampling bool
	// CallerRoots answers a stateless child's roots/list in a call's
	// input_required round through the call's InputHandler (the caller's
	// own roots); without a handler, or when it fails, with Root as
	// always.
	CallerRoots bool
	// Era is the era remembered for the child's definition: EraHandshake
	// initializes at once (no server/discover probe), anything else probes
	// first. Either way Connect falls back to the other era when the child
	// answers that it is not of this one.
	Era string
	// ProbeWait bounds the server/discover probe; 0 = DefaultProbeWait,
	// negative = only ctx bounds it. A stdio child's probe unanswered
	// within it fails Connect with ErrProbeUnanswered, and the child is not
	// initialized; an HTTP server is initialized.
	ProbeWait time.Duration
}

// ErrClosed is returned (wrapped) by calls on a session whose transport is gone.
var ErrClosed = errors.New("mcp session closed")

// closedError is how a session ended: it matches ErrClosed and the cause.
type closedError struct{ cause error }

func (e *closedError) Error() string   { return ErrClosed.Error() + ": " + e.cause.Error() }
func (e *closedError) Unwrap() []error { return []error{ErrClosed, e.cause} }

// Session is one initialized MCP session. Safe for concurrent use.
type Session struct {
	t    Transport
	opts Options
	log  *slog.Logger

	version    string          // set by Connect before the session is shared
	initResult json.RawMessage // set by Connect before the session is shared
	// instructions are initResult's; set by Connect before the session is
	// shared.
	instructions string
	// meta is the _meta members of every request (the stateless era); nil
	// for a handshake session. Set by Connect before the session is shared.
	meta [][2][]byte

	nextID   atomic.Int64
	inFlight atomic.Int64

	mu      sync.Mutex
	pending map[int64]*call // guarded by mu; nil once the session ended
	// listenAcks are ListenResource's waits for the child's
	// acknowledgement, by URI (listen.go). Guarded by mu.
	listenAcks map[string]chan struct{}
	err        error // guarded by mu; why done was closed
	closeErr   error // the transport's Close error; set before done closes

	done       chan struct{} // closed when the session ends
	readerDone chan struct{} // closed when the reader goroutine returns
	ctx        context.Context
	cancel     context.CancelFunc // ends ctx, which bounds replies
	replies    sync.WaitGroup     // goroutines answering the child's requests

	// x is what the transport offers beyond Transport (transport.go); set
	// by Connect before the reader starts. With x.SendWaitsForAnswer each
	// call gives Send a context that ends, with cause ErrAnswered, when
	// its answer arrives on any stream.
	x Extras

	rootsAnswered chan struct{} // closed once a roots/list answer has been sent
	rootsOnce     sync.Once
	rootsAsked    chan struct{} // closed by the reader when a roots/list request arrives
	askedOnce     sync.Once

	tools, resources, templates, prompts listCache
}

// call is one request waiting for its response.
type call struct {
	ch         chan response // buffered 1; receives exactly one response
	onProgress func(json.RawMessage)
	answered   context.CancelCauseFunc // ends Send's context (x.SendWaitsForAnswer); nil otherwise
	// nests: the request may have server requests nested in it (nests);
	// onInput answers those attributed to it (nil = refuse); ctx ends when
	// the request returns.
	nests   bool
	onInput InputHandler
	ctx     context.Context

	progMu   sync.Mutex // serialises onProgress with finish
	finished bool       // guarded by progMu: the caller has returned
}

type response struct {
	result json.RawMessage
	err    error
}

// Connect performs the initialize handshake and returns a ready session.
// ctx bounds only the handshake; the session lives until Close or until the
// transport is gone. On error the transport is closed.
func Connect(ctx context.Context, t Transport, opts Options) (*Session, error) {
	s := newSession(t, opts)
	go s.read()
	var err, first error
	for _, e := range eraOrder(opts.Era) {
		s.version, s.initResult, err = e.open(ctx, s)
		if err == nil {
			s.instructions = instructionsOf(s.initResult)
			if s.meta == nil {
				// A stateless child asks for roots within the
				// request that needs them (requestRounds).
				s.awaitStartupRoots(ctx)
			} else {
				s.subscribe()
			}
			return s, nil
		}
		if e.name() == EraHandshake || first == nil {
			// The handshake's error says more to the server's
			// owner than a failed probe.
			first = err
		}
		s.log.Debug("mcp child is not of this era", "era", e.name(), "err", err)
		if !fallsBack(ctx, e, err) {
			break
		}
	}
	s.Close()
	return nil, fmt.Errorf("initializing mcp session: %w", first)
}

// ProtocolVersion returns the negotiated protocol version.
func (s *Session) ProtocolVersion() string { return s.version }

// InitializeResult returns the child's initialize result as it sent it. The
// caller must not modify it.
func (s *Session) InitializeResult() json.RawMessage { return s.initResult }

// Instructions returns the instructions of the child's initialize result
// (MCP lifecycle, InitializeResult.instructions: "how to use the server and
// its features"), or "" when it sent none, or sent something other than a
// string.
func (s *Session) Instructions() string { return s.instructions }

func instructionsOf(initResult json.RawMessage) string {
	var r struct {
		Instructions any `json:"instructions"`
	}
	json.Unmarshal(initResult, &r) //nolint:errcheck // checked as an object when initialize answered
	text, _ := r.Instructions.(string)
	return text
}

// InFlight returns the number of requests waiting for the child.
func (s *Session) InFlight() int { return int(s.inFlight.Load()) }

// Done is closed when the session has ended: the transport is gone (EOF, a
// protocol violation, an expired HTTP session) or Close was called.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns why Done was closed, nil before. It matches ErrClosed.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the session: it closes the transport (for stdio, the child's
// stdin), fails pending calls with ErrClosed, and waits for the session's
// goroutines, the reader included: with a stdio reader that is not an
// io.Closer, Close returns once the child closes its stdout. It returns the
// transport's Close error. Close must not be called from onProgress.
func (s *Session) Close() error {
	s.shutdown(nil)
	<-s.done
	<-s.readerDone
	s.replies.Wait()
	return s.closeErr
}

// shutdown ends the session once. cause nil means Close was called.
func (s *Session) shutdown(cause error) {
	s.mu.Lock()
	if s.pending == nil {
		s.mu.Unlock()
		return
	}
	var err error = ErrClosed
	if cause != nil {
		err = &closedError{cause}
	}
	s.err = err
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()

	s.cancel()
	s.closeErr = s.t.Close()
	// Done closes before the pending calls fail, so a caller whose call
	// failed with the end finds Done closed and Err set.
	close(s.done)
	for _, c := range pending {
		// Not deliver: this is no answer, and Send must report its own
		// failure (e.g. ErrNotDelivered for an expired session).
		c.ch <- response{err: err}
	}
	// Whoever watches Done (the pool) reports the end; this is for tracing.
	s.log.Debug("mcp session ended", "err", err)
}

// Call sends the request method with params (nil = none) and returns the
// result bytes exactly as the child sent them; the caller owns them. A
// JSON-RPC error answer is returned as *jsonrpc.Error.
//
// If onProgress is non-nil, a progress token unique to this call is merged
// into params._meta.progressToken and every notifications/progress params
// carrying it is passed to onProgress. onProgress runs on the session's
// reader goroutine: it must not block, and it is never called after Call
// returns.
//
// When ctx ends first, the child is sent notifications/cancelled and Call
// returns ctx's error, wrapped; a late response is dropped.
func (s *Session) Call(ctx context.Context, method string, params json.RawMessage, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	if len(params) == 0 {
		return s.requestRounds(ctx, method, nil, onProgress)
	}
	b := getBuf()
	defer putBuf(b)
	if err := appendParams(b, params); err != nil {
		return nil, fmt.Errorf("calling %s: %w", method, err)
	}
	return s.requestRounds(ctx, method, b.Bytes(), onProgress)
}

// CallTool calls tools/call for the tool name with the arguments args (nil
// or null = none) and returns the CallToolResult as the child sent it. A tool that ran
// and failed is a result with "isError":true, not an error.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	if err := s.refusedTool(ctx, name); err != nil {
		return nil, err
	}
	b := getBuf()
	defer putBuf(b)
	if err := writeToolCall(b, name, args); err != nil {
		return nil, fmt.Errorf("calling tool %s: arguments: %w", name, err)
	}
	writeTraceMeta(ctx, b)
	b.WriteByte('}')
	return s.requestRounds(ctx, jsonrpc.MethodToolsCall, b.Bytes(), onProgress)
}

// writeTraceMeta writes, when tracing is on and ctx has a span, the
// params member `"_meta":{"traceparent":…}` (with its leading comma), so a
// stdio child that traces joins the caller's trace. The arguments before
// it are not re-encoded.
func writeTraceMeta(ctx context.Context, b *bytes.Buffer) {
	if !tracing.Enabled() {
		return
	}
	if tp := tracing.Traceparent(ctx); tp != "" {
		b.WriteString(`,"_meta":{"traceparent":`)
		b.Write(jsonrpc.AppendString(b.AvailableBuffer(), tp))
		b.WriteByte('}')
	}
}

// writeToolCall writes tools/call params for name and args (nil or null =
// none) to b, all but the closing brace.
func writeToolCall(b *bytes.Buffer, name string, args json.RawMessage) error {
	b.WriteString(`{"name":`)
	b.Write(jsonrpc.AppendString(b.AvailableBuffer(), name))
	if a := bytes.TrimSpace(args); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		b.WriteString(`,"arguments":`)
		return appendParams(b, args)
	}
	return nil
}

// request runs one request. params (nil = none) must be compact, valid
// JSON. cancel=false (initialize) sends no notifications/cancelled when ctx
// ends.
func (s *Session) request(ctx context.Context, method string, params []byte, onProgress func(json.RawMessage), cancel bool) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("calling %s: %w", method, err)
	}
	id := s.nextID.Add(1)
	c := &call{ch: make(chan response, 1), onProgress: onProgress, nests: nests(method)}
	if c.nests {
		var done context.CancelFunc
		c.ctx, done = context.WithCancel(ctx)
		defer done()
		c.onInput = inputHandlerOf(ctx)
	}
	if onProgress != nil {
		var err error
		// The request id doubles as the progress token: unique among
		// active requests, and it routes through the pending map.
		if params, err = withProgressToken(params, id); err != nil {
			return nil, fmt.Errorf("calling %s: params: %w", method, err)
		}
		defer c.finish()
	}
	if s.meta != nil {
		var err error
		if params, err = withRequestMeta(params, s.metaFor(ctx)); err != nil {
			return nil, fmt.Errorf("calling %s: params: %w", method, err)
		}
	}

	if ctx.Value(uncountedKey{}) == nil {
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
	}

	b := getBuf()
	var idb [20]byte
	b.Write(jsonrpc.AppendRequest(b.AvailableBuffer(), strconv.AppendInt(idb[:0], id, 10), method, params))
	sctx := ctx
	if s.x.SendWaitsForAnswer {
		var stop context.CancelCauseFunc
		sctx, stop = context.WithCancelCause(ctx)
		defer stop(nil)
		c.answered = stop
	}
	s.mu.Lock()
	if s.pending == nil {
		err := s.err
		s.mu.Unlock()
		putBuf(b)
		if errors.Is(err, ErrSessionExpired) {
			// The server ended the session (a GET stream's 404 can tell
			// before this request's own POST would): it never saw this.
			return nil, fmt.Errorf("calling %s: %w: %w", method, ErrNotDelivered, err)
		}
		return nil, fmt.Errorf("calling %s: %w", method, err)
	}
	s.pending[id] = c
	s.mu.Unlock()
	err := s.t.Send(sctx, b.Bytes())
	putBuf(b)
	if err != nil && context.Cause(sctx) != ErrAnswered {
		return nil, fmt.Errorf("calling %s: %w", method, s.sendFailed(ctx, id, err, cancel))
	}

	select {
	case r := <-c.ch:
		if r.err != nil {
			return nil, fmt.Errorf("calling %s: %w", method, r.err)
		}
		return r.result, nil
	case <-ctx.Done():
		if !s.forget(id) {
			// The response (or the session's end) is being delivered.
			r := <-c.ch
			if r.err != nil {
				return nil, fmt.Errorf("calling %s: %w", method, r.err)
			}
			return r.result, nil
		}
		if cancel {
			s.cancelRequest(ctx, id)
		}
		return nil, fmt.Errorf("calling %s: %w", method, ctx.Err())
	}
}

// sendFailed cleans up after a failed Send of request id and returns the
// error to report. A Send error that says the session is over (an expired
// HTTP session, a broken stdio stream) ends the session.
func (s *Session) sendFailed(ctx context.Context, id int64, err error, cancel bool) error {
	fatal := errors.Is(err, ErrSessionExpired) || errors.Is(err, ErrBroken)
	if fatal {
		s.shutdown(err)
	}
	// Only streamable HTTP's POST may have reached the peer when its Send
	// fails with ctx: a stdio Send that fails so wrote nothing (half a
	// message is ErrBroken), and an in-process one does not fail so.
	if s.forget(id) && !fatal && cancel && ctx.Err() != nil && s.x.SendWaitsForAnswer {
		// Streamable HTTP: the POST may have reached the child, or be
		// about to: the server handles each POST on its own, so this
		// cancellation can overtake the request and be ignored as one for
		// an unknown id. Say it again a little later (a second
		// cancellation of a request is ignored too).
		s.cancelRequest(ctx, id)
		if s.x.SendWaitsForAnswer {
			s.cancelAgain(ctx, id)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ret := err
	select {
	case <-s.done:
		ret = s.Err()
	default:
	}
	if errors.Is(err, ErrSessionExpired) {
		// This request's own POST was refused: the server never acted on it.
		return fmt.Errorf("%w: %w", ErrNotDelivered, ret)
	}
	return ret
}

// forget removes id from the pending map; false if it was not there (its
// response is on the way or the session ended).
func (s *Session) forget(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[id]; !ok {
		return false
	}
	delete(s.pending, id)
	return true
}

// deliver hands c its one response.
func (c *call) deliver(r response) {
	c.ch <- r
	if c.answered != nil {
		c.answered(ErrAnswered)
	}
}

func (c *call) finish() {
	c.progMu.Lock()
	c.finished = true
	c.progMu.Unlock()
}

func (c *call) progress(params json.RawMessage) {
	c.progMu.Lock()
	defer c.progMu.Unlock()
	if !c.finished {
		c.onProgress(params)
	}
}

// cancelRequest tells the child to stop working on id. The notification is
// sent off the caller's goroutine: a caller that gave up must not wait for a
// child that stopped reading.
//
// Spec (basic/utilities/cancellation): "When a party wants to cancel an
// in-progress request, it sends a notifications/cancelled notification
// containing: The ID of the request to cancel, An optional reason string".
// Schema: "The request SHOULD still be in-flight, but due to communication
// latency, it is always possible that this notification MAY arrive after the
// request has already finished." Late responses are dropped by the reader.
func (s *Session) cancelRequest(ctx context.Context, id int64) {
	reason := "the caller went away"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = "timeout: the caller's deadline passed"
	}
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		reason += ": " + cause.Error()
	}
	s.sendAsync(jsonrpc.MethodCancelled, jsonrpc.AppendCancelled(make([]byte, 0, 128+len(reason)), id, reason))
}

// recancelDelays are when, after a cancellation that may have overtaken its
// request (an HTTP POST cut short), it is sent again: soon, and once more for
// a loaded server.
var recancelDelays = []time.Duration{500 * time.Millisecond, 2 * time.Second}

// cancelAgain sends id's cancellation again at recancelDelays, from a
// goroutine the session owns; Close does not wait for the delays.
func (s *Session) cancelAgain(ctx context.Context, id int64) {
	s.mu.Lock()
	if s.pending == nil {
		s.mu.Unlock()
		return
	}
	s.replies.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.replies.Done()
		start := time.Now()
		for _, d := range recancelDelays {
			t := time.NewTimer(d - time.Since(start))
			select {
			case <-t.C:
				s.cancelRequest(ctx, id)
			case <-s.ctx.Done():
				t.Stop()
				return
			}
		}
	}()
}

// asyncSendTimeout bounds a message sent off the caller's goroutine.
const asyncSendTimeout = 10 * time.Second

// sendAsync sends msg from a goroutine the session owns (Close waits for
// it), bounded by the session's life and asyncSendTimeout.
func (s *Session) sendAsync(what string, msg []byte) { s.sendAsyncThen(what, msg, nil) }

// sendAsyncThen is sendAsync, calling sent (if non-nil) once msg is sent.
func (s *Session) sendAsyncThen(what string, msg []byte, sent func()) {
	s.mu.Lock()
	if s.pending == nil { // ended: Close may be waiting on replies
		s.mu.Unlock()
		return
	}
	s.replies.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.replies.Done()
		ctx, cancel := context.WithTimeout(s.ctx, asyncSendTimeout)
		defer cancel()
		if err := s.t.Send(ctx, msg); err != nil {
			s.log.Debug("sending to mcp child", "what", what, "err", err)
			if errors.Is(err, ErrBroken) {
				s.shutdown(err)
			}
			return
		}
		if sent != nil {
			sent()
		}
	}()
}

// notify sends a notification (params nil = none).
func (s *Session) notify(ctx context.Context, method string, params []byte) error {
	b := getBuf()
	defer putBuf(b)
	b.Write(jsonrpc.AppendNotification(b.AvailableBuffer(), method, params))
	return s.t.Send(ctx, b.Bytes())
}

// skipped handles a Recv error that reports an oversized message the
// transport skipped; false if err is another error or the session cannot go on.
func (s *Session) skipped(err error) bool {
	var tl *TooLargeError
	return errors.As(err, &tl) && s.tooLargeMessage(tl)
}

// recv reads the next message and, when the transport knows it, the raw id
// of the request it relates to (Extras.RecvRelated).
func (s *Session) recv() ([]byte, []byte, error) {
	if s.x.RecvRelated != nil {
		return s.x.RecvRelated()
	}
	msg, err := s.t.Recv()
	return msg, nil, err
}

// read is the session's one reader goroutine: it routes every message the
// child sends until the transport is gone.
func (s *Session) read() {
	defer close(s.readerDone)
	for {
		msg, related, err := s.recv()
		if err != nil && s.skipped(err) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("child closed its output (EOF)")
			}
			s.shutdown(err)
			return
		}
		if err := s.dispatch(msg, related); err != nil {
			s.shutdown(err)
			return
		}
	}
}
