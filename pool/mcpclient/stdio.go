package mcpclient

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
)

// MaxMessageSize bounds one message read from a child (256 MiB): a child that
// writes an endless line ends its session instead of the daemon's memory.
const MaxMessageSize = 256 << 20

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
	t := &stdio{r: bufio.NewReaderSize(r, 64<<10), rc: r, w: w, wsem: make(chan struct{}, 1)}
	t.wd, _ = w.(writeDeadliner)
	return t
}

// writeDeadliner is implemented by *os.File pipes: a write blocked on a
// child that stopped reading can then end with the caller's context.
type writeDeadliner interface {
	SetWriteDeadline(time.Time) error
}

type stdio struct {
	r  *bufio.Reader // used only by Recv
	rc io.Reader

	wsem chan struct{} // the one writer lock; a channel so waiting honours ctx
	w    io.WriteCloser
	wd   writeDeadliner // w, if it supports deadlines; else nil
	wbuf []byte         // guarded by wsem

	closeOnce sync.Once
	closeErr  error
}

// errBroken marks a Send failure after which the stream is unusable (a
// failed or partial write): the session ends.
var errBroken = errors.New("stdio stream broken")

// Send writes msg and a newline in one Write. Waiting for the writer lock
// ends with ctx; so does a write blocked on a full pipe when w supports
// write deadlines (os.Pipe files do). A write cut short leaves half a
// message in the child's stdin: the error then wraps errBroken.
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

// Recv reads the next line. Blank lines are skipped; a line that is not
// JSON is a *ProtocolError.
func (t *stdio) Recv() ([]byte, error) {
	for {
		line, err := readLine(t.r)
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

// readLine returns the next line of br without its newline, in a new slice.
// At EOF the last unterminated line is returned with a nil error. Lines may
// be up to MaxMessageSize long.
func readLine(br *bufio.Reader) ([]byte, error) {
	frag, err := br.ReadSlice('\n')
	if err == nil {
		return bytes.Clone(frag[:len(frag)-1]), nil
	}
	var line []byte
	for errors.Is(err, bufio.ErrBufferFull) {
		line = append(line, frag...)
		if len(line) > MaxMessageSize {
			return nil, fmt.Errorf("child wrote a message larger than %d bytes", MaxMessageSize)
		}
		frag, err = br.ReadSlice('\n')
	}
	line = append(line, frag...)
	if err == nil {
		return line[:len(line)-1], nil
	}
	if len(line) > 0 && errors.Is(err, io.EOF) {
		return line, nil
	}
	return nil, err
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
