package demo

import (
	"bytes"
	"io"
	"sync"
)

// maxRecordedLine bounds the memory spent looking for the initialize line;
// longer lines are skipped.
const maxRecordedLine = 1 << 20

// initRecorder passes reads through and keeps a copy of the first line that
// contains "initialize" (with its quotes, so "notifications/initialized" does
// not match). The `init` tool reports it byte for byte, which lets tests
// check exactly what a client put on the wire.
type initRecorder struct {
	r io.Reader

	mu       sync.Mutex
	partial  []byte // the current line so far, while not found; guarded by mu
	skipping bool   // the current line exceeded maxRecordedLine; guarded by mu
	line     []byte // the recorded line without its newline; guarded by mu
	found    bool   // guarded by mu
}

func (r *initRecorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.observe(p[:n])
	}
	return n, err
}

func (r *initRecorder) observe(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.found && len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !r.skipping {
			r.partial = append(r.partial, chunk...)
			if len(r.partial) > maxRecordedLine {
				r.partial, r.skipping = nil, true
			}
		}
		if i < 0 {
			return
		}
		if !r.skipping && bytes.Contains(r.partial, []byte(`"initialize"`)) {
			r.line, r.found = r.partial, true
		}
		r.partial, r.skipping = nil, false
		b = b[i+1:]
	}
}

// Line returns the recorded initialize line, or nil if none was seen yet.
// The caller must not modify it.
func (r *initRecorder) Line() []byte {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.line
}
