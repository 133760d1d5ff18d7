package proc

import (
	"strings"
	"testing"
)

func TestRingTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int
		writes []string
		n      int
		want   string
	}{
		{"empty", 64, nil, 3, ""},
		{"fewer lines than asked", 64, []string{"a\nb\n"}, 3, "a\nb"},
		{"last n lines", 64, []string{"a\nb\nc\nd\n"}, 2, "c\nd"},
		{"no trailing newline", 64, []string{"a\nb\nc"}, 2, "b\nc"},
		{"wrapped keeps the last lines", 8, []string{"first line\n", "x\ny\n"}, 2, "x\ny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(tc.max)
			for _, w := range tc.writes {
				r.Write([]byte(w))
			}
			if got := r.Tail(tc.n); got != tc.want {
				t.Errorf("Tail(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}

// TestRingTailWhileWriting reads the tail while a writer keeps wrapping the
// ring: Tail must not read the buffer Write compacts in place (run with
// -race).
func TestRingTailWhileWriting(t *testing.T) {
	r := newRing(256)
	// Small writes into a ring that has wrapped once are compacted in
	// place, in the array an earlier Tail may have sliced.
	line := []byte("xxx\n")
	for range 300 {
		r.Write(line)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20000 {
			r.Write(line)
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		if got := r.Tail(3); !strings.HasSuffix(got, "xxx") {
			t.Fatalf("Tail = %q, want whole lines of x", got)
		}
	}
}
