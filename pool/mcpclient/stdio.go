package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
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
	return &stdio{r: bufio.NewReaderSize(r, 64<<10), rc: r, w: w}
}

type stdio struct {
	r  *bufio.Reader // used only by Recv
	rc io.Reader

	wmu  sync.Mutex // one writer: guards w and wbuf
	w    io.WriteCloser
	wbuf []byte

	closeOnce sync.Once
	closeErr  error
}

// Send writes msg and a newline in one Write. ctx is checked before writing;
// a write already under way is not interrupted (Close does that).
func (t *stdio) Send(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.wbuf = append(append(t.wbuf[:0], msg...), '\n')
	_, err := t.w.Write(t.wbuf)
	if cap(t.wbuf) > 1<<20 {
		t.wbuf = nil
	}
	if err != nil {
		return fmt.Errorf("writing to child's stdin: %w", err)
	}
	return nil
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
