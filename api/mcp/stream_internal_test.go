package mcp

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"
)

// eventWriter is an http.ResponseWriter whose writes arrive on a channel.
type eventWriter struct {
	h      http.Header
	writes chan []byte
}

func newEventWriter() *eventWriter {
	return &eventWriter{h: http.Header{}, writes: make(chan []byte, 64)}
}

func (w *eventWriter) Header() http.Header { return w.h }
func (w *eventWriter) WriteHeader(int)     {}
func (w *eventWriter) Flush()              {}
func (w *eventWriter) Write(b []byte) (int, error) {
	w.writes <- bytes.Clone(b)
	return len(b), nil
}

// waitFor reads w's writes until one contains want; a write that never
// comes fails after a minute (a hang, not a clock: the keep-alive is an
// hour).
func (w *eventWriter) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case b := <-w.writes:
			if bytes.Contains(b, []byte(want)) {
				return
			}
		case <-deadline:
			t.Fatalf("no write with %q", want)
		}
	}
}

// TestStreamTakeoverGetsEveryMessage: a connection that takes a stream
// over from one still open (a client that reconnected before the server
// saw the old connection go) gets the messages added after, at once — the
// connection it took over from does not swallow their wake-up (seen as
// conformance scenarios hanging until the keep-alive).
func TestStreamTakeoverGetsEveryMessage(t *testing.T) {
	st := newStream("s")
	old, cur := newEventWriter(), newEventWriter()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	oldDone := make(chan bool, 1)
	go func() { oldDone <- st.pump(ctx, old, 0, time.Hour) }()
	old.waitFor(t, "retry:") // the old connection waits on the stream
	st.add([]byte(`{"n":1}`))
	old.waitFor(t, `{"n":1}`)

	curDone := make(chan bool, 1)
	go func() { curDone <- st.pump(ctx, cur, 1, time.Hour) }()
	cur.waitFor(t, "retry:")
	for i := 2; i <= 4; i++ {
		msg := `{"n":` + string(rune('0'+i)) + `}`
		st.add([]byte(msg))
		cur.waitFor(t, msg)
	}
	st.end([]byte(`{"n":5}`))
	cur.waitFor(t, `{"n":5}`)
	if !<-curDone {
		t.Error("the stream ended, but its connection did not report it delivered")
	}
	select {
	case ok := <-oldDone:
		if ok {
			t.Error("the connection taken over reported the stream delivered")
		}
	case <-time.After(time.Minute):
		t.Error("the connection taken over still waits on the stream")
	}
}
