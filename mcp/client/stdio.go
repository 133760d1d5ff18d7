package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// NewStdio returns the stdio transport over a child's stdout (r) and stdin
// (w): newline-delimited JSON-RPC messages.
//
// Spec (basic/transports#stdio): "Messages are delimited by newlines, and
// MUST NOT contain embedded newlines." … "The server MUST NOT write anything
// to its stdout that is not a valid MCP message." … "The server MAY write
// UTF-8 strings to its standard error (stderr) for logging purposes."
//
// Close closes w, so the child sees EOF on stdin (the first step of the
// spec's shutdown), and closes r too if it is an io.Closer, which unblocks
// Recv even when the child keeps its stdout open.
func NewStdio(r io.Reader, w io.WriteCloser) Transport {
	t := &stdio{r: bufio.NewReaderSize(r, 64<<10), rc: r, w: w, wsem: make(chan struct{}, 1), max: DefaultMaxMessageBytes,
		skipGrace: skipGrace}
	t.wd, _ = w.(writeDeadliner)
	return t
}

// writeDeadliner is implemented by *os.File pipes: a write blocked on a
// child that stopped reading can then end with the caller's context.
type writeDeadliner interface {
	SetWriteDeadline(time.Time) error
}

type stdio struct {
	r   *bufio.Reader // used only by Recv, as are max and skipGrace
	rc  io.Reader
	max int // the longest line kept; set before the first Recv
	// skipGrace bounds the skip of an oversized line's rest (skipRest).
	skipGrace time.Duration

	wsem chan struct{} // the one writer lock; a channel so waiting honours ctx
	w    io.WriteCloser
	wd   writeDeadliner // w, if it supports deadlines; else nil
	wbuf []byte         // guarded by wsem

	closeOnce sync.Once
	closeErr  error
}

// errBroken is stdio's ErrBroken: a failed or partial write left the
// child's stdin unusable.
var errBroken error = brokenError("stdio stream broken")

// brokenError is an ErrBroken that names its stream.
type brokenError string

func (e brokenError) Error() string      { return string(e) }
func (brokenError) Is(target error) bool { return target == ErrBroken }

// Extras: stdio skips oversized lines, hints at stdout's rule, and talks
// to one process.
func (t *stdio) Extras() Extras {
	return Extras{SetMaxMessage: t.setMaxMessage, ViolationHint: t.violationHint(), HoldWrites: t.holdWrites, OneProcess: true}
}

// holdWrites takes the writer lock until release: Extras.HoldWrites.
func (t *stdio) holdWrites(ctx context.Context) (func(), bool) {
	select {
	case t.wsem <- struct{}{}:
	case <-ctx.Done():
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { <-t.wsem }) }, true
}

// Send writes msg and a newline in one Write. Waiting for the writer lock
// ends with ctx; so does a write blocked on a full pipe when w supports
// write deadlines (os.Pipe files do). A write cut short leaves half a
// message in the child's stdin: the error then wraps ErrBroken.
func (t *stdio) Send(ctx context.Context, msg []byte) error {
	select {
	case t.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-t.wsem }()
	if err := ctx.Err(); err != nil {
		return err
	}
	t.wbuf = append(append(t.wbuf[:0], msg...), '\n')
	n, err := t.write(ctx, t.wbuf)
	if cap(t.wbuf) > 1<<20 {
		t.wbuf = nil
	}
	switch {
	case err == nil:
		return nil
	case n == 0 && ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded):
		return ctx.Err() // nothing written: the stream is intact
	default:
		return fmt.Errorf("%w: writing to the child's stdin: %w", errBroken, err)
	}
}

// write writes b, interrupting the write when ctx ends if w supports
// deadlines.
func (t *stdio) write(ctx context.Context, b []byte) (int, error) {
	if t.wd == nil || ctx.Done() == nil {
		return t.w.Write(b)
	}
	var mu sync.Mutex
	done := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.wd.SetWriteDeadline(time.Unix(1, 0))
		}
	})
	n, err := t.w.Write(b)
	mu.Lock()
	done = true
	mu.Unlock()
	if !stop() {
		t.wd.SetWriteDeadline(time.Time{})
	}
	return n, err
}

func (t *stdio) setMaxMessage(n int) { t.max = n }

// Recv reads the next line. Blank lines are skipped; a line that is not
// JSON is a *ProtocolError; a line longer than the limit is a
// *TooLargeError, and the next Recv goes on after it unless the error is
// Unended.
func (t *stdio) Recv() ([]byte, error) {
	for {
		line, err := t.readLine()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !json.Valid(line) {
			return nil, &ProtocolError{Line: truncate(line, 200), Reason: "a line that is not JSON", Hint: t.violationHint()}
		}
		return line, nil
	}
}

// readLine returns the next line without its newline, in a new slice. At
// EOF the last unterminated line is returned with a nil error. A line over
// t.max is never held whole (memory is bounded by the limit, not by the
// child): readLine keeps its first bytes and, when they do not hold the
// id, skips to the newline keeping its last bytes too, for at most
// skipGrace, and returns a *TooLargeError. When the id was in the first
// bytes, or the line cannot be a message, the error comes at once, as the
// line crosses the limit, and nothing more is read: unless its newline was
// already read, the error is Unended and the session ends.
func (t *stdio) readLine() ([]byte, error) {
	frag, ended, err := t.readFrag()
	if ended && len(frag)-1 <= t.max {
		return bytes.Clone(frag[:len(frag)-1]), nil
	}
	var line []byte
	for {
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return line, nil
			}
			return nil, err
		}
		n := len(frag)
		if ended {
			n-- // the newline
		}
		if len(line)+n > t.max {
			return nil, t.oversized(line, frag, ended)
		}
		if cap(line)-len(line) < len(frag) {
			// Grow as append would, but never past the limit.
			grown := make([]byte, len(line), min(max(2*cap(line), len(line)+len(frag)), t.max+1))
			copy(grown, line)
			line = grown
		}
		line = append(line, frag...)
		if ended {
			return line[:len(line)-1], nil
		}
		frag, ended, err = t.readFrag()
	}
}

// readFrag returns what the reader holds of the current line, up to and
// including its newline (ended), reading once from the child if it holds
// nothing. Unlike bufio's ReadSlice it does not wait for the buffer to
// fill: a line is measured against the limit as its bytes arrive, so a
// child that writes just past the limit and then goes silent is caught at
// once. frag is valid until the next read.
func (t *stdio) readFrag() (frag []byte, ended bool, err error) {
	if t.r.Buffered() == 0 {
		if _, err := t.r.Peek(1); err != nil {
			return nil, false, err
		}
	}
	frag, _ = t.r.Peek(t.r.Buffered())
	if i := bytes.IndexByte(frag, '\n'); i >= 0 {
		frag = frag[:i+1]
		ended = true
	}
	t.r.Discard(len(frag)) //nolint:errcheck // buffered: cannot fail
	return frag, ended, nil
}

// skipGrace is how long the rest of an oversized line whose id was not in
// its first bytes may take to end (see oversized).
const skipGrace = 500 * time.Millisecond

// oversized handles a line found to be over the limit after line+frag;
// ended says frag holds the line's newline.
func (t *stdio) oversized(line, frag []byte, ended bool) error {
	head := make([]byte, 0, headBytes)
	head = append(head, line[:min(len(line), headBytes)]...)
	head = append(head, frag[:min(len(frag), headBytes-len(head))]...)
	tail := keepTail(keepTail(make([]byte, 0, tailBytes), line), bytes.TrimSuffix(frag, []byte("\n")))
	if e := tooLarge(t.max, head, nil); e.ID != nil || e.Method != "" {
		// Its message fails now. A line whose newline has not come may
		// never end (a child that lost its framing writes on and on, its
		// later answers inside the same line): skipping to the newline
		// would hold every later call behind it, so the stream is given
		// up. Only a newline already read proves where the next message
		// starts.
		e.Unended = !ended
		return e
	}
	if !ended {
		// The id may be the line's last member (the TypeScript SDK
		// writes it last): skip to the newline to read it there, but
		// only a line that can be a message, and only for skipGrace.
		// Every call on the session waits behind the line meanwhile, and
		// a child that writes a line with no end (a flood of bytes, then
		// silence) would hold them all until their own timeouts: when
		// the line is not a JSON object or batch, or has not ended
		// within the grace, the stream is given up at once and every
		// call on it fails naming the limit.
		if !opensMessage(head) {
			return &TooLargeError{Limit: t.max, Unended: true}
		}
		var err error
		var cut bool
		if tail, cut, err = t.skipRest(tail); cut {
			return &TooLargeError{Limit: t.max, Unended: true}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	return tooLarge(t.max, head, tail)
}

// opensMessage reports whether head can begin a JSON-RPC message: a JSON
// object, or a batch.
func opensMessage(head []byte) bool {
	i := jsonrpc.SkipSpace(head, 0)
	return i < len(head) && (head[i] == '{' || head[i] == '[')
}

// skipRest is skipLine, cut short after t.skipGrace by closing the child's
// stdout (cut is then true, and the stream is unusable). A reader that is
// not an io.Closer cannot be cut short: its skip ends with its newline.
func (t *stdio) skipRest(tail []byte) (_ []byte, cut bool, err error) {
	c, ok := t.rc.(io.Closer)
	if !ok || t.skipGrace <= 0 {
		tail, err = t.skipLine(tail)
		return tail, false, err
	}
	var mu sync.Mutex
	done := false
	timer := time.AfterFunc(t.skipGrace, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			cut = true
			c.Close() // unblocks the read below
		}
	})
	tail, err = t.skipLine(tail)
	timer.Stop()
	mu.Lock()
	defer mu.Unlock()
	done = true
	return tail, cut, err
}

// skipLine discards input up to and including the next newline, keeping
// the last bytes before it in tail (if tail is non-nil).
func (t *stdio) skipLine(tail []byte) ([]byte, error) {
	for {
		frag, err := t.r.ReadSlice('\n')
		if tail != nil {
			tail = keepTail(tail, bytes.TrimSuffix(frag, []byte("\n")))
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return tail, err
		}
	}
}

func (t *stdio) violationHint() string {
	return "MCP stdio servers must write only JSON-RPC messages to stdout (logs belong on stderr)"
}

// Close closes the child's stdin (and its stdout if r is a Closer). It does
// not take the writer lock, so it unblocks a Send stuck on a full pipe.
func (t *stdio) Close() error {
	t.closeOnce.Do(func() {
		t.closeErr = t.w.Close()
		if c, ok := t.rc.(io.Closer); ok {
			c.Close()
		}
	})
	return t.closeErr
}
