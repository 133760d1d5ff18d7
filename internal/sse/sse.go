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
// payloads are in mcpx.dev/mcpx/api/wire, MCP's in mcp/client.
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

// ErrTooLarge is matched (errors.Is) by the *TooLargeError Decoder.Next
// returns for an event over the decoder's limit.
var ErrTooLarge = errors.New("server-sent event too large")

// TooLargeError is an event that was over the decoder's limit: a line longer
// than the limit, or data fields adding up to more. The decoder keeps only
// the first and last bytes of its data and skips the rest of the event, so
// the next call to Next continues with the following event.
type TooLargeError struct {
	Limit int
	ID    string // the event's id field, if any
	Event string // the event's type, if any
	// Head and Tail are the first HeadBytes and last TailBytes of the
	// event's data (they overlap for data shorter than both together).
	Head, Tail []byte
}

// Bytes of an oversized event's data kept in TooLargeError.
const (
	HeadBytes = 4 << 10
	TailBytes = 256
)

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: more than %d bytes", ErrTooLarge.Error(), e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Decoder reads events from a buffered stream. It is not safe for
// concurrent use.
type Decoder struct {
	br      *bufio.Reader
	maxLine int
	tail    []byte // the last bytes of an over-long line; reused
}

// NewDecoder returns a decoder reading br. A line longer than maxLine bytes,
// or an event whose data adds up to more, is skipped and reported as a
// *TooLargeError; it is never held in memory whole. A line may be longer
// than br's buffer.
func NewDecoder(br *bufio.Reader, maxLine int) *Decoder {
	return &Decoder{br: br, maxLine: maxLine}
}

// Next returns the next event: one with data or an id, ended by a blank
// line. Comment lines (": keep-alive"), unknown fields and blank lines with
// nothing before them are skipped. At the end of the stream it returns
// io.EOF; an event the stream ends in the middle of is not dispatched (as
// the standard says). An event over the limit is returned as its id and
// type with a *TooLargeError, after the decoder has skipped it; decoding
// may go on. Other errors are the reader's.
func (d *Decoder) Next() (Event, error) {
	var ev Event
	hasData := false
	var big *TooLargeError // the event is over the limit: its data is dropped
	for {
		line, long, err := d.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 && !long { // dispatch
			if big != nil {
				big.ID, big.Event = ev.ID, ev.Event
				return Event{ID: ev.ID, Event: ev.Event}, big
			}
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
			if big == nil && (long || len(ev.Data)+1+len(value) > d.maxLine) {
				big = &TooLargeError{Limit: d.maxLine}
				big.Head = append(big.Head, ev.Data[:min(len(ev.Data), HeadBytes)]...)
				big.Tail = keepTail(big.Tail, ev.Data)
				ev.Data = nil
			}
			if big != nil {
				if hasData {
					big.Head = appendHead(big.Head, []byte("\n"))
					big.Tail = keepTail(big.Tail, []byte("\n"))
				}
				big.Head = appendHead(big.Head, value)
				big.Tail = keepTail(big.Tail, value)
				if long {
					big.Tail = keepTail(big.Tail, d.tail)
				}
				hasData = true
				continue
			}
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
		if long && big == nil {
			big = &TooLargeError{Limit: d.maxLine}
		}
	}
}

func appendHead(head, b []byte) []byte {
	return append(head, b[:min(len(b), HeadBytes-len(head))]...)
}

// keepTail appends b to tail, keeping the last TailBytes.
func keepTail(tail, b []byte) []byte {
	if len(b) >= TailBytes {
		return append(tail[:0], b[len(b)-TailBytes:]...)
	}
	if over := len(tail) + len(b) - TailBytes; over > 0 {
		tail = append(tail[:0], tail[over:]...)
	}
	return append(tail, b...)
}

// readLine returns the next line without its "\n" or "\r\n". The line is
// valid until the next read. The last line of a stream need not end in a
// newline. A line longer than the limit is not kept: readLine returns its
// first HeadBytes with long set, leaves its last TailBytes in d.tail, and
// discards the rest.
func (d *Decoder) readLine() (line []byte, long bool, err error) {
	frag, err := d.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		line = append(line, frag...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > d.maxLine {
				return d.skipLine(line)
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
		return nil, false, err
	}
	if len(line) > d.maxLine {
		d.tail = keepTail(d.tail[:0], bytes.TrimSuffix(line, []byte("\r")))
		n := min(len(line), HeadBytes)
		return line[:n:n], true, nil
	}
	return bytes.TrimSuffix(line, []byte("\r")), false, nil
}

// skipLine discards the rest of a line that is already over the limit,
// keeping its first and last bytes.
func (d *Decoder) skipLine(line []byte) ([]byte, bool, error) {
	head := bytes.Clone(line[:min(len(line), HeadBytes)])
	d.tail = keepTail(d.tail[:0], line)
	for {
		frag, err := d.br.ReadSlice('\n')
		switch {
		case err == nil:
			d.tail = keepTail(d.tail, frag[:len(frag)-1])
			d.tail = bytes.TrimSuffix(d.tail, []byte("\r"))
			return head, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			d.tail = keepTail(d.tail, frag)
		case errors.Is(err, io.EOF):
			d.tail = keepTail(d.tail, frag)
			return head, true, nil
		default:
			return nil, false, err
		}
	}
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
