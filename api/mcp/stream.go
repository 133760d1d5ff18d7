package mcp

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/internal/sse"
)

// A stream is one server-sent event stream of a session: a POST's answer
// (the request's own messages, then its response) or the session's GET
// stream (everything not related to a request). Its events are kept, a
// bounded number of them, so that a client that lost the connection can
// resume with Last-Event-ID (event ids are "<stream>_<seq>"). A stream has
// at most one connection at a time; a new one takes over.

// maxKept bounds the events a stream keeps for a resume.
const maxKept = 512

// retryField goes with the priming event: how long a client whose
// connection broke waits before it resumes (SEP-1699: the server SHOULD
// send it; the conformance suite's server-sse-retry-field). A broken
// connection is rarely mcpx's doing, and mcpx keeps the stream's events,
// so a second is soon enough without being a storm.
const retryField = "retry: 1000\n"

type stream struct {
	id string

	mu    sync.Mutex
	evs   [][]byte // events first.. (JSON-RPC messages)
	first int      // seq of evs[0]
	ended bool     // the response is in: no more events
	conn  int      // the current connection's number; 0 = none
	conns int      // connections so far
	sent  int      // seq of the next event no connection has been written yet
	// changed is closed (and replaced) at every change a pump waits
	// for: a message, the end, a new connection taking over. A
	// broadcast, not a token: a pump that is taken over must not
	// swallow the wake-up of the one that took over.
	changed  chan struct{}
	fin      chan struct{} // closed by end
	detached time.Time     // when the last connection went; zero while one is attached or none ever was

	// onAdd, if set (before the stream is used), is called after each
	// message add appends: a request's call starts streaming on the first.
	onAdd func()
}

func newStream(id string) *stream {
	return &stream{id: id, changed: make(chan struct{}), fin: make(chan struct{})}
}

// add appends a message. It never blocks: a stream without a connection
// keeps the newest maxKept.
func (st *stream) add(msg []byte) {
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return
	}
	st.evs = append(st.evs, msg)
	if len(st.evs) > maxKept {
		n := len(st.evs) - maxKept
		st.evs = append(st.evs[:0:0], st.evs[n:]...)
		st.first += n
	}
	st.signalLocked()
	st.mu.Unlock()
	if st.onAdd != nil {
		st.onAdd()
	}
}

// end adds the last message (nil: none) and ends the stream.
func (st *stream) end(msg []byte) {
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return
	}
	if msg != nil {
		st.evs = append(st.evs, msg)
	}
	st.ended = true
	close(st.fin)
	st.signalLocked()
	st.mu.Unlock()
}

// signalLocked wakes every pump waiting on the stream; st.mu is held.
func (st *stream) signalLocked() {
	close(st.changed)
	st.changed = make(chan struct{})
}

// eventID is the SSE id of the event seq.
func (st *stream) eventID(seq int) string { return st.id + "_" + strconv.Itoa(seq) }

// parseEventID splits a Last-Event-ID into the stream and the seq.
func parseEventID(v string) (stream string, seq int, ok bool) {
	i := strings.LastIndexByte(v, '_')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n < -1 {
		return "", 0, false
	}
	return v[:i], n, true
}

// pump writes the stream's events from seq from on to w until the stream
// ends (true) or ctx does, the connection breaks or another takes over
// (false). A priming event (an id, the retry field, no data) goes first,
// so a client can resume even when the connection breaks before the first
// message.
// keepAlive is how often an idle stream sends a comment.
func (st *stream) pump(ctx context.Context, w http.ResponseWriter, from int, keepAlive time.Duration) bool {
	st.mu.Lock()
	st.conns++
	me := st.conns
	st.conn = me
	st.detached = time.Time{}
	st.signalLocked() // the connection this one takes over from returns
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		if st.conn == me {
			st.conn = 0
			st.detached = time.Now()
		}
		st.mu.Unlock()
	}()

	send := openSSE(w)
	var buf []byte
	write := func(b []byte) bool {
		buf = b
		return send(b)
	}
	if !write(sse.AppendEvent([]byte("id: "+st.eventID(from-1)+"\n"+retryField), "", nil)) {
		return false
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	next := from
	for {
		st.mu.Lock()
		if st.conn != me {
			st.mu.Unlock()
			return false
		}
		if next < st.first {
			next = st.first // lost to the bound: resume from the oldest kept
		}
		batch := st.evs[next-st.first:]
		ended := st.ended
		changed := st.changed
		st.mu.Unlock()
		for _, msg := range batch {
			b := append(buf[:0], "id: "...)
			b = append(b, st.eventID(next)...)
			b = append(b, '\n')
			if !write(sse.AppendEvent(b, "message", msg)) {
				return false
			}
			next++
			st.mu.Lock()
			st.sent = max(st.sent, next)
			st.mu.Unlock()
		}
		if ended && len(batch) == 0 {
			return true
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		case <-tick.C:
			if !write(sse.AppendComment(buf[:0], "keep-alive")) {
				return false
			}
		}
	}
}

// attached reports whether a connection is streaming st now.
func (st *stream) attached() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.conn != 0
}

// openSSE answers w as an event stream; the function it returns writes
// and flushes, false once the connection is gone.
func openSSE(w http.ResponseWriter) func([]byte) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	return func(b []byte) bool {
		_, err := w.Write(b)
		return err == nil && rc.Flush() == nil
	}
}

// unsent is the seq of the first event no connection has had: where a
// new connection without Last-Event-ID begins, so that what was said while
// none was open is not lost.
func (st *stream) unsent() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return max(st.sent, st.first)
}

// abandoned reports whether the stream has had no connection for grace
// after having had one.
func (st *stream) abandoned(now time.Time, grace time.Duration) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.conn == 0 && !st.detached.IsZero() && now.Sub(st.detached) > grace
}

// delivered reports whether the stream ended and a connection had all of
// it.
func (st *stream) delivered() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ended && st.sent >= st.first+len(st.evs)
}

// idleSince is when the stream lost its last connection; zero if it has
// one now or never had one.
func (st *stream) idleSince() time.Time {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.detached
}
