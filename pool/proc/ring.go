package proc

import (
	"bytes"
	"sync"
)

// ring keeps the last max bytes written to it: a child's stderr tail.
type ring struct {
	mu  sync.Mutex
	buf []byte // guarded by mu; the tail is its last max bytes, it holds fewer than 2*max
	max int
}

func newRing(max int) *ring { return &ring{max: max} }

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	// Compact only once the buffer holds twice the tail: moving the tail
	// on every write would copy max bytes per line of a flood.
	if len(r.buf) >= 2*r.max {
		r.buf = append(r.buf[:0], r.buf[len(r.buf)-r.max:]...)
	}
	return len(p), nil
}

// tailLocked is the kept tail: the last max bytes written. r.mu is held.
func (r *ring) tailLocked() []byte {
	return r.buf[max(0, len(r.buf)-r.max):]
}

// Tail returns at most n trailing lines, without a partial first line when
// the ring has wrapped. It reads the buffer under mu: Write compacts it in
// place, so the bytes may not be looked at after unlocking.
func (r *ring) Tail(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := bytes.TrimRight(r.tailLocked(), "\n")
	end := len(b)
	for i := len(b) - 1; i >= 0 && n > 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return string(b[i+1 : end])
			}
		}
	}
	return string(b)
}
