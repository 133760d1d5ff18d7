package pool_test

import (
	"testing"

	"mcpx.dev/mcpx/pool"
)

// TestEventLogResume: ids increase from 1; Since returns what follows an
// id, and counts what was lost when the ring no longer holds it.
func TestEventLogResume(t *testing.T) {
	l := pool.NewEventLog(4)
	for range 6 {
		l.Add(pool.Event{Kind: pool.EventSpawn})
	}
	ids := func(evs []pool.Event) (out []uint64) {
		for _, e := range evs {
			out = append(out, e.ID)
		}
		return out
	}
	for _, tc := range []struct {
		after uint64
		want  []uint64
		lost  uint64
	}{
		{0, []uint64{3, 4, 5, 6}, 2}, // 1 and 2 fell out
		{1, []uint64{3, 4, 5, 6}, 1},
		{2, []uint64{3, 4, 5, 6}, 0},
		{4, []uint64{5, 6}, 0},
		{6, nil, 0},
	} {
		evs, lost, _ := l.Since(tc.after)
		if got := ids(evs); lost != tc.lost || len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) || (len(got) > 0 && got[len(got)-1] != tc.want[len(tc.want)-1]) {
			t.Errorf("Since(%d) = %v, lost %d; want %v, lost %d", tc.after, got, lost, tc.want, tc.lost)
		}
	}
	_, _, more := l.Since(6)
	select {
	case <-more:
		t.Fatal("more is closed before an event was added")
	default:
	}
	l.Add(pool.Event{Kind: pool.EventReady})
	select {
	case <-more:
	default:
		t.Fatal("more is not closed after Add")
	}
}
