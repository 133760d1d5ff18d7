package pool

import (
	"bytes"
	"sync"
)

// ring keeps the last max bytes written to it: a child's stderr tail.
type ring struct {
	mu  sync.Mutex
	buf []byte // guarded by mu
	max int
}

func newRing(max int) *ring { return &ring{max: max} }

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	if over := len(r.buf) - r.max; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
	return len(p), nil
}

// Tail returns at most n trailing lines, without a partial first line when
// the ring has wrapped. It reads the buffer under mu: Write compacts it in
// place, so the bytes may not be looked at after unlocking.
func (r *ring) Tail(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := bytes.TrimRight(r.buf, "\n")
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
