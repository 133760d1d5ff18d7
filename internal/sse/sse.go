// Package sse reads and writes server-sent event streams (WHATWG HTML,
// "Server-sent events", §9.2): the line-level codec shared by the daemon's
// event writer, its Go client, and pool's streamable-HTTP transport.
//
//	d := sse.NewDecoder(bufio.NewReader(resp.Body), 1<<20)
//	for {
//		ev, err := d.Next()
//		if err != nil {
//			return err // io.EOF: the stream ended
//		}
//		handle(ev.Event, ev.Data)
//	}
//
// It knows nothing about what the events mean: mcpx's own event names and
// payloads are in mcpx.dev/mcpx/api/wire, MCP's in pool/mcpclient.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Event is one dispatched event.
type Event struct {
	ID    string // the id field; "" = none
	Event string // the event type; "" = none (a "message" event to EventSource)
	// Data is the data fields joined by "\n". The caller owns it: the
	// decoder never writes to it again.
	Data  []byte
	Retry time.Duration // the retry field, if it was a positive integer; 0 = none
}

// ErrTooLarge is returned (wrapped) by Decoder.Next for a line longer than
// the decoder's limit.
var ErrTooLarge = errors.New("server-sent event line too large")

// Decoder reads events from a buffered stream. It is not safe for
// concurrent use.
type Decoder struct {
	br      *bufio.Reader
	maxLine int
}

// NewDecoder returns a decoder reading br. Lines longer than maxLine bytes
// fail with ErrTooLarge; a line may be longer than br's buffer.
func NewDecoder(br *bufio.Reader, maxLine int) *Decoder {
	return &Decoder{br: br, maxLine: maxLine}
}

// Next returns the next event: one with data or an id, ended by a blank
// line. Comment lines (": keep-alive"), unknown fields and blank lines with
// nothing before them are skipped. At the end of the stream it returns
// io.EOF; an event the stream ends in the middle of is not dispatched (as
// the standard says). Other errors are the reader's, or ErrTooLarge.
func (d *Decoder) Next() (Event, error) {
	var ev Event
	hasData := false
	for {
		line, err := d.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 { // dispatch
			if hasData || ev.ID != "" {
				return ev, nil
			}
			ev, hasData = Event{}, false
			continue
		}
		if line[0] == ':' { // a comment, e.g. a keep-alive
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				ev.Data = append(ev.Data, '\n')
			}
			ev.Data = append(ev.Data, value...)
			hasData = true
		case "event":
			ev.Event = string(value)
		case "id":
			ev.ID = string(value)
		case "retry":
			if ms, err := strconv.Atoi(string(value)); err == nil && ms > 0 {
				ev.Retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// readLine returns the next line without its "\n" or "\r\n". The line is
// valid until the next read. The last line of a stream need not end in a
// newline.
func (d *Decoder) readLine() ([]byte, error) {
	frag, err := d.br.ReadSlice('\n')
	var line []byte
	if errors.Is(err, bufio.ErrBufferFull) {
		line = append(line, frag...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > d.maxLine {
				return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, d.maxLine)
			}
			frag, err = d.br.ReadSlice('\n')
			line = append(line, frag...)
		}
	} else {
		line = frag
	}
	switch {
	case err == nil:
		line = line[:len(line)-1]
	case errors.Is(err, io.EOF) && len(line) > 0:
	default:
		return nil, err
	}
	if len(line) > d.maxLine {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, d.maxLine)
	}
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// AppendEvent appends one event named name (none if "") carrying data. Data
// is split into lines, each its own data field, so multi-line data stays one
// event; a trailing newline is dropped, and "\r\n" becomes "\n". Name must
// not contain a newline.
func AppendEvent(b []byte, name string, data []byte) []byte {
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	for line := range bytes.SplitSeq(bytes.TrimRight(data, "\r\n"), []byte("\n")) {
		b = append(b, "data: "...)
		b = append(b, bytes.TrimSuffix(line, []byte("\r"))...)
		b = append(b, '\n')
	}
	return append(b, '\n')
}

// AppendComment appends a comment line, which readers skip: servers send
// them to keep idle connections open. Text must not contain a newline.
func AppendComment(b []byte, text string) []byte {
	b = append(b, ": "...)
	b = append(b, text...)
	return append(b, "\n\n"...)
}
