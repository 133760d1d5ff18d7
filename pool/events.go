package pool

import (
	"sync"
	"time"
)

// EventKind names a lifecycle event.
type EventKind string

// The lifecycle events. The pool emits all but EventReload,
// EventReloadRefused and the tool events, from one place
// (Pool.updateLocked, as an instance's phase changes); its owner emits
// those.
const (
	EventSpawn   EventKind = "spawn"   // a start attempt began (the restart count in Reason)
	EventReady   EventKind = "ready"   // the child answered initialize (Pid)
	EventRestart EventKind = "restart" // the instance is replaced (Reason: "executable changed: bytes changed" — or location, program file, package files —, "definition changed"; Path)
	EventEvict   EventKind = "evict"   // stopped to make room for another key (Reason)
	EventReap    EventKind = "reap"    // stopped for idleness or a gone owner (Reason)
	EventCrash   EventKind = "crash"   // the running child exited unexpectedly (Reason)
	EventExit    EventKind = "exit"    // a child ended otherwise: stopped, or its session expired (Reason)
	EventReload  EventKind = "reload"  // the config was reloaded (Reason: what triggered it)
	// EventReloadRefused: a reload found a config that does not load; the
	// running one is kept (Reason: the trigger and the problems).
	EventReloadRefused EventKind = "reload-refused"
	EventBackoff       EventKind = "backoff" // failing: no start before Until
	EventWedged        EventKind = "wedged"  // alive but silent, being killed (Reason)
	// EventToolChanged and EventToolFlagged are the broker's too: a
	// listing changed a tool of the server's pinned ones (Tool, Change,
	// OldHash, NewHash, Diff), or a tool's description reads as
	// instructions to the model (Flags).
	EventToolChanged EventKind = "tool-changed"
	EventToolFlagged EventKind = "tool-flagged"
	// EventAuthRequired, EventAuthSignedIn, EventAuthRefreshed and
	// EventAuthFailed are the broker's: a url server's sign-in
	// (docs/oauth.md). Reason says what happened; never a token.
	EventAuthRequired  EventKind = "auth-required"
	EventAuthSignedIn  EventKind = "auth-signed-in"
	EventAuthRefreshed EventKind = "auth-refreshed"
	EventAuthFailed    EventKind = "auth-failed"
)

// EventUpgrade: the daemon re-executed itself and adopted the children it
// could (Reason: versions, binaries, instances adopted and replaced); its
// owner emits it, as it does EventReload.
const EventUpgrade EventKind = "upgrade"

// Event is one lifecycle event. IDs increase by one from 1, in the order
// the events happened.
type Event struct {
	ID       uint64
	Time     time.Time
	Kind     EventKind
	Server   string
	Key      string
	Instance string
	Pid      int
	Reason   string
	Path     string    // EventRestart for a changed executable: the command's path
	Until    time.Time // EventBackoff
	// StderrTail is the child's last stderr lines, on EventCrash,
	// EventWedged and EventBackoff; the owner's to see.
	StderrTail string
	// Tool, Change ("added", "changed", "removed"), OldHash, NewHash and
	// Flags (package promptscan's rules) are EventToolChanged's and
	// EventToolFlagged's; Diff, the owner's to see, is how the tool's
	// description and schemas changed.
	Tool, Change, OldHash, NewHash string
	Flags                          []string
	Diff                           string
}

// DefaultEventBuffer is how many events an EventLog keeps.
const DefaultEventBuffer = 1024

// EventLog is a bounded, in-order log of events that readers can resume
// from: the newest Cap events are kept; a reader that asks for older ones
// is told how many it lost. Safe for concurrent use; Add never blocks.
type EventLog struct {
	mu     sync.Mutex
	buf    []Event       // guarded by mu; a ring of cap(buf) events
	start  int           // guarded by mu; index of the oldest in buf
	next   uint64        // guarded by mu; the id of the next event
	notify chan struct{} // guarded by mu; closed and replaced on each Add
}

// NewEventLog returns a log keeping the newest n events; n <= 0 =
// DefaultEventBuffer.
func NewEventLog(n int) *EventLog {
	if n <= 0 {
		n = DefaultEventBuffer
	}
	return &EventLog{buf: make([]Event, 0, n), next: 1, notify: make(chan struct{})}
}

// Add appends ev, setting its ID (and its Time, if zero), and returns it.
func (l *EventLog) Add(ev Event) Event {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	l.mu.Lock()
	ev.ID = l.next
	l.next++
	if len(l.buf) < cap(l.buf) {
		l.buf = append(l.buf, ev)
	} else {
		l.buf[l.start] = ev
		l.start = (l.start + 1) % len(l.buf)
	}
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
	return ev
}

// Since returns the events after id (all kept ones for 0), oldest first,
// how many events after id are no longer kept, and a channel closed when
// the next event is added. The caller owns the slice.
func (l *EventLog) Since(id uint64) (evs []Event, lost uint64, more <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.buf)
	oldest := l.next - uint64(n) // the id of buf's oldest event
	if id+1 < oldest {
		lost = oldest - id - 1
	}
	for i := range n {
		ev := l.buf[(l.start+i)%n]
		if ev.ID > id {
			evs = append(evs, ev)
		}
	}
	return evs, lost, l.notify
}
