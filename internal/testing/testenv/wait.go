package testenv

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// WaitFor polls cond every 10 ms until it holds, failing the test after
// 30 s. It bounds a wait for something another process does; it asserts
// nothing about how long that takes (the bound is generous: under the race
// detector, with every package's tests at once on two cores, a 50 000-note
// progress flood has taken more than 10 s).
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers, such as a logger
// and a child's stderr copier. The zero value is ready to use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer // guarded by mu
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
