package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/wire"
)

// maxEventLine bounds one line of an event stream: a result is one data
// line per line of the child's JSON, which encoding/json writes as one.
const maxEventLine = 256 << 20

func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == wire.MediaEventStream
}

// readCallEvents reads a streamed tool call (wire.CallStreamEvents): the call's id,
// progress and input events, then one result or error event, whose result
// it returns. onInput (nil = ignore) gets each request for input; it must
// not block.
func readCallEvents(r io.Reader, onProgress func(json.RawMessage), onInput func(wire.InputRequest), onNotice func(event string, data json.RawMessage)) (json.RawMessage, error) {
	d := sse.NewDecoder(bufio.NewReader(r), maxEventLine)
	for {
		ev, err := d.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the broker ended the stream without a result")
		}
		if err != nil {
			return nil, err
		}
		switch ev.Event {
		case wire.StreamProgress:
			if onProgress != nil {
				onProgress(ev.Data)
			}
		case wire.StreamInput:
			var in wire.InputRequest
			if err := json.Unmarshal(ev.Data, &in); err != nil {
				return nil, fmt.Errorf("undecodable input event: %s", ev.Data)
			}
			if onInput != nil {
				onInput(in)
			}
		case wire.StreamResult:
			return ev.Data, nil
		case wire.StreamError:
			var p wire.Problem
			if err := json.Unmarshal(ev.Data, &p); err != nil {
				return nil, fmt.Errorf("undecodable error event: %s", ev.Data)
			}
			return nil, &p
		case wire.StreamMessage, wire.StreamElicitationComplete:
			if onNotice != nil {
				onNotice(ev.Event, ev.Data)
			}
		}
	}
}

// Events reads the daemon's lifecycle events (GET /v1/events): the kept
// ones after lastID (0: all kept), then, with follow, each new one until
// ctx ends or the daemon goes away. fn gets each event and its raw data;
// a gap (events lost before the kept ones) comes as a LifecycleEvent of
// kind wire.EventGap whose ID is the last lost id and whose Reason says
// how many. An error from fn ends the stream and is returned; the stream
// ending is nil.
func (c *Client) Events(ctx context.Context, lastID uint64, follow bool, fn func(wire.LifecycleEvent, json.RawMessage) error) error {
	return c.StreamEvents(ctx, EventsQuery{LastID: lastID, Follow: follow}, fn)
}

// EventsQuery selects lifecycle events (GET /v1/events).
type EventsQuery struct {
	LastID uint64 // resume after this event's id; 0 = every kept event
	Follow bool   // after the kept events, each new one until ctx ends
	// Session keeps only the events of this session's instances; the
	// session by its key or its name.
	Session string
}

// StreamEvents is Events with a query: the lifecycle events q selects.
func (c *Client) StreamEvents(ctx context.Context, q EventsQuery, fn func(wire.LifecycleEvent, json.RawMessage) error) error {
	h := http.Header{"Accept": {wire.MediaEventStream}}
	if q.LastID > 0 {
		h.Set("Last-Event-ID", strconv.FormatUint(q.LastID, 10))
	}
	v := url.Values{}
	if !q.Follow {
		v.Set("follow", "false")
	}
	if q.Session != "" {
		v.Set(wire.QuerySession, q.Session)
	}
	query := ""
	if len(v) > 0 {
		query = "?" + v.Encode()
	}
	resp, err := c.send(ctx, wire.OpEvents, nil, nil, h, query)
	if err != nil {
		return err
	}
	return readStream(ctx, resp, 1<<20, "the event stream", func(ev sse.Event) error {
		var doc wire.LifecycleEvent
		if ev.Event == wire.EventGap {
			var g wire.EventGapData
			if err := json.Unmarshal(ev.Data, &g); err != nil {
				return fmt.Errorf("undecodable gap event: %s", ev.Data)
			}
			id, _ := strconv.ParseUint(ev.ID, 10, 64)
			doc = wire.LifecycleEvent{ID: id, Kind: wire.EventGap, Reason: fmt.Sprintf("%d events lost", g.Lost)}
		} else if err := json.Unmarshal(ev.Data, &doc); err != nil {
			return fmt.Errorf("undecodable %s event: %s", ev.Event, ev.Data)
		}
		return fn(doc, ev.Data)
	})
}

// streamEnded is the error of a stream the broker ended with an EventEnd
// (its caller's rights ended).
func streamEnded(data []byte) error {
	var d wire.StreamEndData
	json.Unmarshal(data, &d)
	return fmt.Errorf("the broker ended the stream: %s", d.Reason)
}

// readStream reads resp's event stream (events of at most max bytes) to
// its end, handing each event to fn; what names the stream in errors. The
// end of ctx or of the stream is a nil error; the broker's end of it
// (its caller's rights ended) is streamEnded's.
func readStream(ctx context.Context, resp *http.Response, max int, what string, fn func(sse.Event) error) error {
	defer resp.Body.Close()
	d := sse.NewDecoder(bufio.NewReader(resp.Body), max)
	for {
		ev, err := d.Next()
		switch {
		case errors.Is(err, io.EOF), err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("reading %s: %w", what, err)
		case ev.Event == wire.StreamEnd:
			return streamEnded(ev.Data)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}
