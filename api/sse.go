package api

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/wire"
)

// The API's server-sent event streams (a streamed tool call, the lifecycle
// events of GET /v1/events, the log of GET /v1/log) are all written
// through one eventWriter.

// wantsEvents reports whether the client asked for a server-sent event stream.
func wantsEvents(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && mt == wire.MediaEventStream {
				return true
			}
		}
	}
	return false
}

// eventWriter writes server-sent events through the sse codec, flushing
// after each. Only the handler's goroutine uses it.
type eventWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte // reused for each event
	err error  // the first write error: the client is gone, later events are dropped
}

func newEventWriter(w http.ResponseWriter) *eventWriter {
	h := w.Header()
	h.Set("Content-Type", wire.MediaEventStream)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // ask reverse proxies not to buffer the stream
	w.WriteHeader(http.StatusOK)
	e := &eventWriter{w: w, rc: http.NewResponseController(w)}
	e.err = e.rc.Flush()
	return e
}

// comment writes an SSE comment line, which clients ignore.
func (e *eventWriter) comment(text string) {
	if e.err != nil {
		return
	}
	e.write(sse.AppendComment(e.buf[:0], text))
}

// send writes one event; multi-line data stays one event.
func (e *eventWriter) send(name string, data []byte) {
	if e.err != nil {
		return
	}
	e.write(sse.AppendEvent(e.buf[:0], name, data))
}

func (e *eventWriter) write(b []byte) {
	e.buf = b
	if _, e.err = e.w.Write(b); e.err == nil {
		e.err = e.rc.Flush()
	}
}

// sendID writes one event with its id.
func (e *eventWriter) sendID(id uint64, name string, data []byte) {
	if e.err != nil {
		return
	}
	b := append(e.buf[:0], "id: "...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, '\n')
	e.write(sse.AppendEvent(b, name, data))
}
