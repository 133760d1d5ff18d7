package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// streamCall runs a tool call as a server-sent event stream (see wire's
// Event* constants):
//
//	event: call       the call's id (wire.CallStarted); first
//	event: input      a request for input from the child (wire.InputRequest),
//	                  answered with POST /v1/calls/{call}/input
//	event: progress   the params of each notifications/progress, in order
//	event: message    a notifications/message of the call's instance (wire.LogMessage)
//	event: elicitation-complete  a URL-mode elicitation of this call is done
//	event: context    where the call ran (wire.CallContext), once it reached
//	                  an instance; just before the result or error
//	event: result     the child's CallToolResult, unchanged
//	event: error      a Problem, if the call failed after the stream began,
//	                  or was cancelled because its caller's rights ended
//
// Errors found before the call starts (unknown server, bad headers or body,
// a rate limit) are plain problem responses with their status: the stream
// opens when the broker has admitted the call. The call runs on its own
// goroutine so that the broker's progress callback never waits on a slow
// client; this handler writes every event and waits for that goroutine.
func (s *server) streamCall(w http.ResponseWriter, r *http.Request, req broker.Request, tool string, args json.RawMessage) error {
	// Resolve first: an unknown server, a forbidden server or cwd, or a bad
	// cwd is a plain problem with its own status, not a 200 stream that
	// carries an error.
	tgt, err := s.b.Target(req)
	if err != nil {
		return err
	}
	c, _ := callerFrom(r.Context())
	sc := s.calls.start(c, s.inputWait, func(msg string, args ...any) {
		s.log.InfoContext(r.Context(), msg, append([]any{"server", req.Server, "tool", tool}, args...)...) // trace_id, with otel on
	})
	defer s.calls.end(sc)
	req.OnInput = sc.ask
	// Set on the call's goroutine, read once it is done.
	var where []byte
	req.OnTarget = func(t broker.CallTarget) { where, _ = json.Marshal(callContextOf(t)) }
	admitted := make(chan struct{})
	req.OnAdmitted = func() { close(admitted) }
	ctx, stop := s.watchRights(r)
	defer stop()
	q := newProgressQueue()
	nq := newProgressQueue() // the instance's notices: message, elicitation-complete
	defer s.b.WatchNotices(sc.notices(tgt.Server, tgt.Key, nq.push))()
	type outcome struct {
		res json.RawMessage
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if v := recover(); v != nil {
				s.log.ErrorContext(ctx, "panic in tool call", "server", req.Server, "tool", tool, "panic", v, "stack", string(debug.Stack()))
				o.err = &broker.Error{Kind: broker.KindInternal, Op: "call", Err: fmt.Errorf("panic: %v", v)}
			}
			done <- o
		}()
		o.res, o.err = s.b.CallTool(ctx, req, tool, args, q.push)
	}()
	// The stream opens when the call is admitted: a call refused by a rate
	// limit (or waiting for a concurrency slot in vain) is a plain 429 with
	// Retry-After, as an unstreamed call's is.
	select {
	case <-admitted:
	case o := <-done:
		// Admitted and done may both be ready (a call that fails at once,
		// a tool not found): the select picks either, so admission is
		// asked again, and an admitted call's error is the stream's.
		select {
		case <-admitted:
		default:
			if o.err != nil {
				return o.err
			}
		}
		done <- o
	}
	ev := newEventWriter(w)
	started, _ := json.Marshal(wire.CallStarted{Call: sc.id})
	ev.send(wire.StreamCall, started)
	// A long call with no progress would leave the stream silent, and
	// proxies and clients with idle timeouts drop silent streams.
	keepAlive := time.NewTicker(s.keepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-keepAlive.C:
			ev.comment(wire.KeepAliveComment)
		case <-q.ready:
			for _, p := range q.take() {
				ev.send(wire.StreamProgress, p)
			}
		case <-nq.ready:
			sendNotices(ev, nq.take())
		case in := <-sc.asks:
			// Progress first: what the child reported before it asked.
			for _, p := range q.take() {
				ev.send(wire.StreamProgress, p)
			}
			b, _ := json.Marshal(in)
			ev.send(wire.StreamInput, b)
		case o := <-done:
			if n := q.close(); n > 0 {
				s.log.Info("dropped progress the client did not read in time", "server", req.Server, "tool", tool, "dropped", n)
			}
			for _, p := range q.take() {
				ev.send(wire.StreamProgress, p)
			}
			nq.close()
			sendNotices(ev, nq.take())
			if where != nil {
				ev.send(wire.StreamContext, where)
			}
			if why, ok := endedRights(ctx); ok && o.err != nil {
				o.err = why // the call was cancelled because its caller's rights ended
			}
			if o.err != nil {
				p, _ := json.Marshal(s.problem(r, o.err))
				ev.send(wire.StreamError, p)
			} else {
				ev.send(wire.StreamResult, o.res)
			}
			return nil
		}
	}
}

// maxQueuedProgress bounds the progress a stream holds for a client that
// reads slower than its child reports. Progress is a status, not a log:
// the newest notes say everything the dropped ones did.
const maxQueuedProgress = 256

// progressQueue hands progress from the broker's goroutine to the handler
// without ever blocking the broker. It holds at most maxQueuedProgress
// notes, dropping the oldest: a child that floods progress to a client that
// does not read must not grow the daemon. The result never passes through
// it, so it is never dropped.
type progressQueue struct {
	ready   chan struct{} // has a value when items may be waiting
	mu      sync.Mutex
	items   []json.RawMessage // guarded by mu
	dropped int               // guarded by mu: notes dropped so far
	shut    bool              // guarded by mu: the call returned; later pushes are dropped
}

func newProgressQueue() *progressQueue {
	return &progressQueue{ready: make(chan struct{}, 1)}
}

// push is the broker's onProgress callback. The caller may reuse p after push
// returns, so it is copied.
func (q *progressQueue) push(p json.RawMessage) {
	q.mu.Lock()
	if !q.shut {
		if len(q.items) >= maxQueuedProgress {
			q.items[0] = nil
			q.items = q.items[1:] // append reallocates now and then: memory stays O(max)
			q.dropped++
		}
		q.items = append(q.items, bytes.Clone(p))
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *progressQueue) take() []json.RawMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// close ends the queue and returns how many notes it dropped.
func (q *progressQueue) close() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shut = true
	return q.dropped
}
