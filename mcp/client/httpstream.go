package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// The SSE streams of streamable HTTP: a POST's answer stream and its
// resumption, and the GET stream of the server's messages that belong to
// no request (spec: basic/transports#streamable-http). http.go has the
// requests and the transport's state.

// readStream hands each SSE event's data of a POST's answer stream to
// Recv; it closes ans once the answer to reqID has been handed over, and
// reads on for at most answerGrace (calling stop then). If the stream
// breaks before the answer, it is resumed with GET and Last-Event-ID when
// the server gave event ids; the answer may arrive on the resumed stream.
//
// Spec (#resumability-and-redelivery): "If the client wishes to resume after
// a disconnection, it SHOULD issue an HTTP GET to the MCP endpoint, and
// include the Last-Event-ID header".
func (t *httpTransport) readStream(ctx context.Context, body io.Reader, reqID []byte, ans chan struct{}, stop func()) error {
	answered := false
	var grace *time.Timer
	defer func() {
		if grace != nil {
			grace.Stop()
		}
	}()
	markAnswered := func() {
		if !answered {
			answered = true
			close(ans)
			grace = time.AfterFunc(answerGrace, stop)
		}
	}
	var lastID string
	retry := time.Second
	for attempt := 0; ; attempt++ {
		err := t.readSSE(body, func(ev sse.Event, big *sse.TooLargeError) error {
			if ev.ID != "" {
				lastID = ev.ID
			}
			if ev.Retry > 0 {
				retry = ev.Retry
			}
			if ev.Event != "" && ev.Event != "message" {
				return nil
			}
			if big != nil {
				tl := tooLarge(t.max, big.Head, big.Tail)
				if tl.ID == nil && tl.Method == "" && !answered {
					// Nothing tells whose it is: on this stream, most
					// likely the answer it is for.
					tl.ID = reqID
				}
				if err := t.pushBig(ctx, tl); err != nil {
					return err
				}
				if bytes.Equal(tl.ID, reqID) {
					markAnswered()
				}
				return nil
			}
			if len(bytes.TrimSpace(ev.Data)) == 0 {
				return nil // e.g. the priming event that carries only an id
			}
			isAnswer := !answered && answers(ev.Data, reqID)
			if err := t.pushRelated(ctx, ev.Data, reqID); err != nil {
				return err
			}
			if isAnswer {
				markAnswered()
			}
			return nil
		})
		if answered || ctx.Err() != nil || t.closedErr() != nil {
			if err != nil && !answered {
				return err
			}
			return nil
		}
		var pe *ProtocolError
		if errors.As(err, &pe) {
			return err
		}
		if errors.Is(err, context.Canceled) {
			return err // the caller gave up, or the answer came elsewhere
		}
		if lastID == "" || attempt == 5 {
			if err == nil {
				err = errors.New("stream ended before the response")
			}
			return fmt.Errorf("reading the answer stream: %w", err)
		}
		rc, err := t.resume(ctx, lastID, retry)
		if err != nil {
			return fmt.Errorf("resuming the answer stream: %w", err)
		}
		defer rc.Close()
		body = rc
	}
}

// answers reports whether msg is (or a batch that contains) the response to id.
func answers(msg, id []byte) bool {
	found := false
	check := func(m []byte) {
		if e, err := jsonrpc.Parse(m); err == nil && e.IsResponse() && bytes.Equal(e.ID, id) {
			found = true
		}
	}
	if i := jsonrpc.SkipSpace(msg, 0); i < len(msg) && msg[i] == '[' {
		jsonrpc.Elements(msg, check)
	} else {
		check(msg)
	}
	return found
}

// resume reopens a stream after lastID with GET, after waiting retry.
// ctx bounds the wait and the new stream.
func (t *httpTransport) resume(ctx context.Context, lastID string, retry time.Duration) (io.ReadCloser, error) {
	select {
	case <-time.After(retry):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	req, sid, err := t.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	if err := t.checkStatus(resp, sid, "GET"); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp.Body, nil
}

// startGet opens, once after initialization, the GET stream on which the
// server sends messages that belong to no request.
//
// Spec (#listening-for-messages-from-the-server): "The client MAY issue an
// HTTP GET to the MCP endpoint. This can be used to open an SSE stream,
// allowing the server to communicate to the client, without the client
// first sending data via HTTP POST." "The server MUST either return
// Content-Type: text/event-stream in response to this HTTP GET, or else
// return HTTP 405 Method Not Allowed".
func (t *httpTransport) startGet() {
	t.mu.Lock()
	defer t.mu.Unlock()
	// The stateless era has no GET stream (a server's own messages come
	// within the requests, or on subscriptions/listen). A closed transport
	// starts none: Close may already be waiting for its goroutines.
	start := t.err == nil && t.version != "" && t.version != jsonrpc.StatelessVersion && !t.getStarted
	t.getStarted = t.getStarted || start
	if start {
		t.wg.Go(t.listen) // under mu, as goStream: never after Close's Wait
	}
}

// getOpenWait bounds how long openStream waits for the GET stream's
// answer before the handshake goes on without it.
const getOpenWait = 5 * time.Second

// openStream (Extras.OpenStream) opens the GET stream and waits (bounded
// by ctx and getOpenWait) until the server has answered it: Connect calls
// it before notifications/initialized, so that a server that sends a
// request as soon as it is initialized (roots/list, typically) finds the
// stream open. The official TypeScript SDK's server drops a message meant
// for the GET stream when there is none yet, and then waits 60 s for the
// answer that never comes (seen with server-everything's get-roots-list
// under load).
func (t *httpTransport) openStream(ctx context.Context) {
	t.startGet()
	t.mu.Lock()
	started := t.getStarted
	t.mu.Unlock()
	if !started {
		return
	}
	timer := time.NewTimer(getOpenWait)
	defer timer.Stop()
	select {
	case <-t.getAnswered:
	case <-ctx.Done():
	case <-t.closed:
	case <-timer.C:
	}
}

func (t *httpTransport) markGetAnswered() {
	t.getAnsweredOnce.Do(func() { close(t.getAnswered) })
}

// listen keeps the GET stream open until the transport closes or the
// server says it has none.
func (t *httpTransport) listen() {
	defer t.markGetAnswered()
	backoff := time.Second
	lastID := ""
	for t.ctx.Err() == nil {
		req, sid, err := t.newRequest(t.ctx, http.MethodGet, nil)
		if err != nil {
			return
		}
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := t.client.Do(req)
		t.markGetAnswered() // the server has registered the stream (or has none, or failed)
		if err == nil {
			if resp.StatusCode == http.StatusMethodNotAllowed {
				resp.Body.Close()
				return // the server offers no GET stream
			}
			if err = t.checkStatus(resp, sid, "GET"); err == nil {
				backoff = time.Second
				err = t.readSSE(resp.Body, func(ev sse.Event, big *sse.TooLargeError) error {
					if ev.ID != "" {
						lastID = ev.ID
					}
					if ev.Retry > 0 {
						backoff = ev.Retry
					}
					if ev.Event != "" && ev.Event != "message" {
						return nil
					}
					if big != nil {
						return t.pushBig(t.ctx, tooLarge(t.max, big.Head, big.Tail))
					}
					if len(bytes.TrimSpace(ev.Data)) == 0 {
						return nil
					}
					return t.push(t.ctx, ev.Data)
				})
			}
			resp.Body.Close()
		}
		var pe *ProtocolError
		if errors.As(err, &pe) {
			t.fail(err)
			return
		}
		if errors.Is(err, ErrSessionExpired) {
			return
		}
		select {
		case <-time.After(backoff):
		case <-t.ctx.Done():
			return
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// sseReaders recycles stream readers: one per POST answered with SSE.
var sseReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// readSSE calls fn for each event of the stream r until EOF (nil) or an
// error. An event over the limit is passed as its id and type with big set;
// its data was skipped, never buffered whole.
func (t *httpTransport) readSSE(r io.Reader, fn func(ev sse.Event, big *sse.TooLargeError) error) error {
	br := sseReaders.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() { br.Reset(nil); sseReaders.Put(br) }()
	d := sse.NewDecoder(br, t.max)
	for {
		ev, err := d.Next()
		var big *sse.TooLargeError
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &big):
		case err != nil:
			return err
		}
		if err := fn(ev, big); err != nil {
			return err
		}
	}
}
