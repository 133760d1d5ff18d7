package bridge

import (
	"bufio"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/mcp/jsonrpc"
	"mcpx.dev/mcpx/wire"
)

// The server's SSE streams: a POST's answer stream and its resumption,
// and the GET stream of the server's messages that belong to no request
// (spec basic/transports#listening-for-messages-from-the-server).

// maxBackoff caps the delay between reconnections.
const maxBackoff = 30 * time.Second

// streamState is what a stream's reader keeps across reconnections.
type streamState struct {
	lastID string        // the last event id, for Last-Event-ID
	retry  time.Duration // the server's retry field, 0 = none
}

// relayStream relays a POST's answer stream until the answer to e has
// been written. A stream that breaks before it is resumed with GET and
// Last-Event-ID when the server gave event ids (spec
// #resumability-and-redelivery), at most Options.Retries times without
// progress; a request whose answer cannot come is answered with an error,
// so that the client does not wait for ever.
func (b *bridge) relayStream(ctx context.Context, resp *http.Response, e *jsonrpc.Message) {
	var st streamState
	body := resp.Body
	failures := 0
	for {
		before := st.lastID
		answered := b.readEvents(ctx, body, &st, func(msg []byte) bool { return b.fromServer(msg, e) })
		body.Close()
		if answered || ctx.Err() != nil || !e.IsRequest() {
			return
		}
		if st.lastID == "" {
			b.out.write(errorResponse(e.ID, jsonrpc.CodeServerError, "the MCP endpoint ended the answer's stream without answering", nil))
			return
		}
		if st.lastID != before {
			failures = 0
		}
		if failures++; failures > b.opts.Retries {
			b.out.write(errorResponse(e.ID, jsonrpc.CodeServerError, "the MCP endpoint's answer stream broke and could not be resumed", nil))
			return
		}
		if !b.sleep(ctx, b.backoff(failures, st.retry)) {
			return
		}
		r, err := b.get(ctx, st.lastID)
		if err != nil {
			if ctx.Err() == nil {
				b.log.Info("mcp: resuming an answer stream failed", "err", err)
			}
			body = http.NoBody
			continue
		}
		if r.StatusCode != http.StatusOK || !eventStream(r) {
			r.Body.Close()
			b.out.write(errorResponse(e.ID, jsonrpc.CodeServerError, "the MCP endpoint refused to resume the answer's stream ("+r.Status+")", nil))
			return
		}
		body = r.Body
	}
}

// readEvents hands the data of each message event of body to handle
// until handle returns true (the answer awaited) or the stream ends.
func (b *bridge) readEvents(ctx context.Context, body io.Reader, st *streamState, handle func([]byte) bool) bool {
	d := sse.NewDecoder(bufio.NewReader(body), b.opts.MaxMessage)
	for ctx.Err() == nil {
		ev, err := d.Next()
		if ev.ID != "" {
			st.lastID = ev.ID
		}
		if ev.Retry > 0 {
			st.retry = ev.Retry
		}
		var big *sse.TooLargeError
		switch {
		case errors.As(err, &big):
			b.log.Warn("mcp: dropping a message from the server over the size limit", "limit", big.Limit)
			continue
		case err != nil:
			return false // ended or broke; the caller decides
		}
		// Events with no data prime a stream with an id (SEP-1699);
		// events of other types are not MCP messages.
		if len(ev.Data) == 0 || (ev.Event != "" && ev.Event != "message") {
			continue
		}
		if handle(ev.Data) {
			return true
		}
	}
	return false
}

// get opens a GET stream of the session, resuming after lastID ("" = a
// new stream).
func (b *bridge) get(ctx context.Context, lastID string) (*http.Response, error) {
	b.mu.Lock()
	sess, version := b.session, b.version
	b.mu.Unlock()
	h := b.header(sess, version, nil)
	h.Set("Accept", wire.MediaEventStream)
	if lastID != "" {
		h.Set(headerLastEventID, lastID)
	}
	return b.opts.Client.Forward(ctx, http.MethodGet, b.opts.Path, nil, h)
}

func eventStream(resp *http.Response) bool {
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return media == wire.MediaEventStream
}

// backoff is the delay before the n-th reconnection in a row: the
// server's retry field if it gave one, else Options.Backoff doubled each
// time, at most maxBackoff.
func (b *bridge) backoff(n int, retry time.Duration) time.Duration {
	if retry > 0 {
		return min(retry, maxBackoff)
	}
	d := b.opts.Backoff
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// sleep waits d, or until ctx is done (false).
func (b *bridge) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// startListening opens the GET stream of a session once its initialize
// is answered, unless there is no session, the era has none, or one is
// open already. It returns a channel closed once the server has answered
// the stream's first GET (or it failed): the client's
// notifications/initialized waits for it, so that what the server asks
// as soon as it is initialized (roots/list) has a stream to come on.
func (b *bridge) startListening() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.listen != nil {
		return b.listenReady
	}
	ready := make(chan struct{})
	if b.closed || b.session == "" || b.version >= jsonrpc.StatelessVersion {
		close(ready)
		return ready
	}
	ctx, cancel := context.WithCancel(b.ctx)
	b.listen, b.listenReady = cancel, ready
	b.streams.Add(1)
	go func() {
		defer b.streams.Done()
		b.listenLoop(ctx, ready)
	}()
	return ready
}

// awaitListening waits (within listenWait) for the GET stream's first
// answer, if one is opening.
func (b *bridge) awaitListening(ctx context.Context) {
	b.mu.Lock()
	ready := b.listenReady
	b.mu.Unlock()
	if ready == nil {
		return
	}
	t := time.NewTimer(listenWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	case <-ctx.Done():
	}
}

// listenWait bounds how long notifications/initialized waits for the GET
// stream.
const listenWait = 5 * time.Second

// stopListeningLocked stops the GET stream, if one is open.
func (b *bridge) stopListeningLocked() {
	if b.listen != nil {
		b.listen()
		b.listen, b.listenReady = nil, nil
	}
}

// listenLoop relays the GET stream, reconnecting (with Last-Event-ID)
// when it ends, until ctx is done, the server says it offers none (405),
// the session is gone (404: the next request recovers it), or
// Options.Retries reconnections in a row brought nothing.
func (b *bridge) listenLoop(ctx context.Context, ready chan struct{}) {
	var st streamState
	failures := 0
	for attempt := 0; ; attempt++ {
		if attempt > 0 && !b.sleep(ctx, b.backoff(failures+1, st.retry)) {
			return
		}
		resp, err := b.get(ctx, st.lastID)
		if attempt == 0 {
			close(ready)
		}
		if ctx.Err() != nil {
			if err == nil {
				resp.Body.Close()
			}
			return
		}
		progress := false
		switch {
		case err != nil:
			b.log.Info("mcp: the GET stream failed", "err", err)
		case resp.StatusCode == http.StatusMethodNotAllowed:
			resp.Body.Close()
			return // the server sends nothing outside requests
		case resp.StatusCode == http.StatusNotFound:
			resp.Body.Close()
			b.log.Info("mcp: the server ended the session; the next request opens a new one")
			return
		case resp.StatusCode != http.StatusOK || !eventStream(resp):
			resp.Body.Close()
			b.log.Info("mcp: the GET stream was refused", "status", resp.Status)
		default:
			before := st.lastID
			got := false
			b.readEvents(ctx, resp.Body, &st, func(msg []byte) bool {
				got = true
				b.fromServer(msg, nil)
				return false
			})
			resp.Body.Close()
			progress = got || st.lastID != before
		}
		if progress {
			failures = 0
		} else if failures++; failures > b.opts.Retries {
			b.log.Warn("mcp: giving up on the GET stream: the server's own requests and notifications will not arrive", "attempts", failures)
			return
		}
	}
}

// recoverSession opens a new session for one the server lost (it
// answered 404 in session lost, spec #session-management: "the client
// MUST start a new session by sending a new InitializeRequest"): it
// replays the client's initialize and initialized, reopens the GET stream,
// and warns the client that the server's state of the old session is
// gone. Requests that find the same session lost wait for one recovery.
func (b *bridge) recoverSession(ctx context.Context, lost string) error {
	b.recover.Lock()
	defer b.recover.Unlock()
	b.mu.Lock()
	cur, init, note := b.session, b.initReq, b.initNote
	b.mu.Unlock()
	if cur != lost {
		return nil // recovered already
	}
	if init == nil {
		return errors.New("the MCP endpoint lost the session, and the client's initialize is unknown")
	}
	e, _, _ := parse(init)
	resp, _, err := b.post(ctx, init, &e, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := problemMessage(resp.StatusCode, readBody(resp, b.opts.MaxMessage))
		return errors.New("the MCP endpoint lost the session and refused a new one: " + msg)
	}
	result, ok := b.initializeResult(ctx, resp, &e)
	if !ok {
		return errors.New("the MCP endpoint lost the session and did not answer a new initialize")
	}
	b.mu.Lock()
	b.session = resp.Header.Get(jsonrpc.HeaderSessionID)
	b.stopListeningLocked()
	b.mu.Unlock()
	b.negotiated(result)
	b.startListening()
	if note != nil {
		b.awaitListening(ctx)
		ne, _, _ := parse(note)
		r, _, err := b.post(ctx, note, &ne, nil)
		if err != nil {
			return err
		}
		r.Body.Close()
	}
	b.log.Warn("mcp: the MCP endpoint lost the session (a daemon restart?); opened a new one")
	warning, _ := jsonrpc.Notification(jsonrpc.MethodMessage, map[string]any{ // a map always encodes
		"level":  "warning",
		"logger": "mcpx",
		"data": "mcpx mcp: the broker lost this MCP session (it restarted or was upgraded) and a new one was opened; " +
			"what the old session held on the server (subscriptions, the log level, pending requests) is gone",
	})
	b.out.write(warning)
	return nil
}

// initializeResult reads the answer to a replayed initialize e, JSON or
// SSE, without relaying it: the client has its answer already.
func (b *bridge) initializeResult(ctx context.Context, resp *http.Response, e *jsonrpc.Message) (result []byte, ok bool) {
	pick := func(msg []byte) bool {
		r, batch, err := parse(msg)
		if err != nil || batch || !r.IsResponse() || string(r.ID) != string(e.ID) || len(r.Result) == 0 {
			return false
		}
		result, ok = r.Result, true
		return true
	}
	if eventStream(resp) {
		b.readEvents(ctx, resp.Body, &streamState{}, pick)
	} else {
		pick(readBody(resp, b.opts.MaxMessage))
	}
	return result, ok
}

// endSession deletes the session, if there is one (spec
// #session-management: "clients that no longer need a particular session
// SHOULD send an HTTP DELETE"), within deleteTimeout.
func (b *bridge) endSession() {
	b.mu.Lock()
	sess, version, own := b.session, b.version, b.ownUsed
	b.session = ""
	b.stopListeningLocked()
	b.mu.Unlock()
	if sess == "" && !own {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	h := b.header(sess, version, nil)
	if sess == "" {
		h.Set(wire.HeaderSession, b.own) // the stateless client's: ended by the DELETE
	}
	resp, err := b.opts.Client.Forward(ctx, http.MethodDelete, b.opts.Path, nil, h)
	if err != nil {
		b.log.Info("mcp: deleting the session failed", "err", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		b.log.Info("mcp: the server refused to delete the session", "status", resp.Status)
	}
}

// deleteTimeout bounds the DELETE at the end.
const deleteTimeout = 5 * time.Second
