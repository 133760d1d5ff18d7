package pool

import (
	"testing"
)

// TestEventLogRestore: a successor's log keeps its predecessor's events
// and ids, and numbers its own after them.
func TestEventLogRestore(t *testing.T) {
	old := NewEventLog(4)
	for _, k := range []EventKind{EventSpawn, EventReady, EventSpawn, EventReady, EventReap} {
		old.Add(Event{Kind: k})
	}
	evs, next := old.kept()
	l := NewEventLog(4)
	l.Add(Event{Kind: EventReload}) // before the adoption
	l.restore(evs, next)
	l.Add(Event{Kind: EventUpgrade})
	got, _, _ := l.Since(0)
	var ids []uint64
	for _, ev := range got {
		ids = append(ids, ev.ID)
	}
	if len(got) != 4 || got[2].Kind != EventReload || got[3].Kind != EventUpgrade || ids[0] != 4 || ids[3] != 7 {
		t.Errorf("restored log: %+v (ids %v)", got, ids)
	}
	if _, lost2, _ := l.Since(1); lost2 != 2 {
		t.Errorf("lost %d from 1, want 2", lost2)
	}
}
