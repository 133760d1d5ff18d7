package pool

import (
	"fmt"
	"log/slog"
	"time"
)

// This file is the one place an instance's lifecycle fields change: every
// write to them goes through [instance.apply], which accepts only the
// edges listed in [edges]. TestLifecycleFieldsChangeOnlyInApply keeps it so.

// phase is where an instance is in its life. The API shows it as a State
// (see phase.state); idle and stopped both show as "stopped".
type phase uint8

const (
	// phaseIdle: in the pool with no child, because it was never started
	// or its child exited; the next call starts one. The zero value: a new
	// instance is idle.
	phaseIdle phase = iota
	// phaseStarting: a start attempt (spawn + initialize) is under way;
	// starting is set, gen is nil.
	phaseStarting
	// phaseReady: a child is running and takes calls; gen is set,
	// starting is nil.
	phaseReady
	// phaseBackoff: in the pool with no child, failing: no start before
	// backoffUntil. Like idle otherwise.
	phaseBackoff
	// phaseStopping: out of the pool (stopped by request, evicted, reaped,
	// its definition changed, the daemon is shutting down or its one call
	// is done); its stopper drains its calls and stops what runs.
	phaseStopping
	// phaseStopped: out of the pool and its stopper is done. Final; a
	// start or a child that outlived the stopper's wait may still report.
	phaseStopped
	// phaseWedged: in the pool, its child alive but silent (a call timed
	// out and a ping got no answer, or a health check's ping got none); the
	// child is being killed, gen is set until its watcher reports the exit.
	// New callers wait for that, then start a new child (the health check
	// starts one itself).
	phaseWedged

	numPhases
)

var phaseNames = [numPhases]string{"idle", "starting", "ready", "backoff", "stopping", "stopped", "wedged"}

func (ph phase) String() string {
	if ph < numPhases {
		return phaseNames[ph]
	}
	return fmt.Sprintf("phase(%d)", ph)
}

// state is how the API shows ph.
func (ph phase) state() State {
	switch ph {
	case phaseStarting:
		return StateStarting
	case phaseReady:
		return StateReady
	case phaseBackoff:
		return StateBackoff
	case phaseStopping:
		return StateStopping
	case phaseWedged:
		return StateWedged
	}
	return StateStopped
}

// removed reports whether the instance is out of the pool: no new caller
// can reach it, and its stopper owns it.
func (ph phase) removed() bool { return ph == phaseStopping || ph == phaseStopped }

// eventKind is what happens to an instance.
type eventKind uint8

const (
	evStart       eventKind = iota // a caller found no child and starts one (attempt)
	evStarted                      // the start attempt answered initialize (attempt, gen)
	evStartFailed                  // the start attempt failed (attempt, fail)
	evExited                       // the running child's session ended (gen, fail unless it just expired)
	evAcquire                      // a caller takes the running child for a call (gen)
	evRelease                      // a call ended (ok: it succeeded, or the child answered with an error)
	evRemove                       // taken out of the pool; its stopper runs next
	evStopped                      // its stopper is done
	evWedged                       // the running child stopped answering (gen, fail: why)

	numEvents
)

var eventNames = [numEvents]string{"start", "started", "startFailed", "exited", "acquire", "release", "remove", "stopped", "wedged"}

func (k eventKind) String() string {
	if k < numEvents {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", k)
}

// event is one thing that happens to an instance, with what it brings.
type event struct {
	kind    eventKind
	now     time.Time
	attempt *startAttempt // evStart: the new attempt; evStarted, evStartFailed: the one that ended
	gen     *generation   // evStarted: the new child; evExited, evAcquire, evWedged: the child concerned
	fail    *failure      // evStartFailed, evWedged; evExited when the child crashed (nil: its session expired)
	ok      bool          // evRelease: the call succeeded, or the child answered it with an error
	// evRemove: why (kept for the exit event), the event that announces
	// the removal ("" = none: the child's exit will), and for a changed
	// executable its path.
	reason string
	notice EventKind
	path   string
}

// failure is why a start failed or a child died, kept for status and for
// the error callers get while the instance backs off.
type failure struct{ detail, tail string }

// edge is one allowed transition: event on in phase from leads to to.
type edge struct {
	from phase
	on   eventKind
	to   phase
}

// edges is every allowed transition; anything else is a bug, refused by
// apply (and a panic in tests).
//
//	idle      --start-->        starting
//	backoff   --start-->        starting   (only once backoffUntil has passed)
//	starting  --started-->      ready
//	starting  --startFailed-->  idle, or backoff after backoffAfter failures in a row
//	ready     --exited-->       idle when its session expired (re-initialized on the next call);
//	                            else a crash: idle, or backoff as for startFailed
//	ready     --acquire-->      ready      (inflight+1)
//	ready     --wedged-->       wedged     (a call timed out and a ping got no answer, or a
//	                            health check's ping got none; the child is being killed)
//	wedged    --exited-->       idle       (no failure counted: the wedge is recorded, and
//	                            the next call starts a new child at once)
//	any       --release-->      unchanged  (inflight-1; a good call clears the failures)
//	idle, starting, ready, backoff, wedged --remove--> stopping (once: a stopper owns it from here)
//	stopping  --stopped-->      stopped
//	stopping, stopped --started, startFailed, exited--> unchanged
//	                            (a start or child outliving the stopper's wait; whoever
//	                            reports a started child then stops it)
//
// A call can outlive its child and even its instance, so release is
// accepted everywhere; acquire only hands out a ready child. A new state
// is a phase, its rows here and its case in next; a new rule for when to
// back off is failPhase and failLocked, fed by what the event carries.
var edges = []edge{
	{phaseIdle, evStart, phaseStarting},
	{phaseBackoff, evStart, phaseStarting},

	{phaseStarting, evStarted, phaseReady},
	{phaseStarting, evStartFailed, phaseIdle},
	{phaseStarting, evStartFailed, phaseBackoff},

	{phaseReady, evExited, phaseIdle},
	{phaseReady, evExited, phaseBackoff},
	{phaseReady, evAcquire, phaseReady},
	{phaseReady, evWedged, phaseWedged},
	{phaseWedged, evExited, phaseIdle},

	{phaseIdle, evRelease, phaseIdle},
	{phaseStarting, evRelease, phaseStarting},
	{phaseReady, evRelease, phaseReady},
	{phaseBackoff, evRelease, phaseBackoff},
	{phaseStopping, evRelease, phaseStopping},
	{phaseStopped, evRelease, phaseStopped},
	{phaseWedged, evRelease, phaseWedged},

	{phaseIdle, evRemove, phaseStopping},
	{phaseStarting, evRemove, phaseStopping},
	{phaseReady, evRemove, phaseStopping},
	{phaseBackoff, evRemove, phaseStopping},
	{phaseWedged, evRemove, phaseStopping},

	{phaseStopping, evStopped, phaseStopped},

	{phaseStopping, evStarted, phaseStopping},
	{phaseStopping, evStartFailed, phaseStopping},
	{phaseStopping, evExited, phaseStopping},
	{phaseStopped, evStarted, phaseStopped},
	{phaseStopped, evStartFailed, phaseStopped},
	{phaseStopped, evExited, phaseStopped},
}

// allowed[from][on] has bit to set for every edge; built from edges.
var allowed = func() (a [numPhases][numEvents]uint16) {
	for _, e := range edges {
		a[e.from][e.on] |= 1 << e.to
	}
	return a
}()

// The targets are bits of a uint16: at most 16 phases.
var _ [16 - numPhases]struct{}

func (e edge) allowed() bool {
	return e.from < numPhases && e.on < numEvents && e.to < numPhases && allowed[e.from][e.on]&(1<<e.to) != 0
}

// Crash-loop backoff: after this many consecutive failures the next start
// waits, doubling from backoffBase up to backoffMax.
const (
	backoffAfter = 3
	backoffBase  = time.Second
	backoffMax   = time.Minute
)

// refusal is why apply refused an event; 0 means it did not.
type refusal uint8

const (
	accepted refusal = iota
	noEdge
	noAttempt
	backoffNotOver
	otherAttempt
	noChild
	noFailure
	otherChild
	nothingInFlight
	unknownEvent
)

var refusalNames = [...]string{
	accepted:        "accepted",
	noEdge:          "no edge allows it",
	noAttempt:       "no start attempt",
	backoffNotOver:  "the backoff is not over",
	otherAttempt:    "not the start under way",
	noChild:         "no child",
	noFailure:       "no failure",
	otherChild:      "not the running child",
	nothingInFlight: "no call in flight",
	unknownEvent:    "unknown event",
}

// transitionError is an event the instance refused: a bug in the pool.
type transitionError struct {
	id     string
	from   phase
	ev     eventKind
	to     phase
	reason refusal
}

func (e *transitionError) Error() string {
	return fmt.Sprintf("instance %s: illegal %s in phase %s (to %s): %s", e.id, e.ev, e.from, e.to, refusalNames[e.reason])
}

// panicOnIllegal makes an illegal transition panic instead of being logged
// and refused. The pool's own tests set it (export_test.go), so a bug there
// fails loudly; the daemon never does.
var panicOnIllegal = false

// updateLocked applies ev to inst and reports whether it was accepted.
// An illegal event is a bug in the pool: it panics in the pool's tests; the
// daemon logs it and leaves inst as it was. p.mu must be held.
func (p *Pool) updateLocked(inst *instance, ev *event) bool {
	from, gen := inst.phase, inst.gen
	if err := inst.apply(ev); err != nil {
		p.refusedLocked(inst, err)
		return false
	}
	p.announceLocked(inst, from, gen, ev)
	return true
}

// announceLocked adds the lifecycle events of an accepted transition to
// the pool's event log: this is the one place the pool emits them. from
// and gen are the phase and child before ev.
func (p *Pool) announceLocked(inst *instance, from phase, gen *generation, ev *event) {
	mk := func(kind EventKind, g *generation, reason string) Event {
		return Event{Time: ev.now, Kind: kind, Server: inst.def.Name, Key: inst.key.key, Instance: inst.id, Pid: g.pid(), Reason: reason}
	}
	var evs []Event
	switch ev.kind {
	case evStart:
		reason := ""
		if inst.restarts > 0 {
			reason = fmt.Sprintf("restart %d", inst.restarts)
		}
		evs = append(evs, mk(EventSpawn, nil, reason))
	case evStarted:
		if inst.phase == phaseReady {
			evs = append(evs, mk(EventReady, ev.gen, ""))
		}
	case evExited:
		switch {
		case from == phaseReady && ev.fail != nil:
			e := mk(EventCrash, ev.gen, ev.fail.detail)
			e.StderrTail = ev.fail.tail
			evs = append(evs, e)
		case from == phaseWedged:
			evs = append(evs, mk(EventExit, ev.gen, "killed: wedged"))
		case from.removed():
			evs = append(evs, mk(EventExit, ev.gen, inst.removedWhy))
		default:
			evs = append(evs, mk(EventExit, ev.gen, "session expired"))
		}
	case evWedged:
		e := mk(EventWedged, ev.gen, ev.fail.detail)
		e.StderrTail = ev.fail.tail
		evs = append(evs, e)
	case evRemove:
		if ev.notice != "" {
			e := mk(ev.notice, gen, ev.reason)
			e.Path = ev.path
			evs = append(evs, e)
		}
	}
	if inst.phase == phaseBackoff && from != phaseBackoff {
		e := mk(EventBackoff, nil, inst.lastErr)
		e.Until, e.StderrTail = inst.backoffUntil, inst.lastTail
		evs = append(evs, e)
	}
	for _, e := range evs {
		p.events.Add(e)
		p.counters.event(e.Server, e.Kind)
	}
}

func (p *Pool) refusedLocked(inst *instance, err error) {
	if panicOnIllegal {
		panic(err)
	}
	p.logLocked(p.log, slog.LevelError, "refused an illegal instance transition; this is a bug in mcpx", "err", err,
		"server", inst.def.Name, "key", inst.key.key, "instance", inst.id)
}

// apply is the only function that changes an instance's lifecycle fields.
// It checks ev against edges and ev's preconditions first and changes
// nothing when either fails; otherwise it makes every change ev implies,
// together. The caller holds Pool.mu.
func (i *instance) apply(ev *event) error {
	from := i.phase
	to, reason := i.next(ev)
	if reason == accepted && !(edge{from, ev.kind, to}).allowed() {
		reason = noEdge
	}
	if reason != accepted {
		return &transitionError{id: i.id, from: from, ev: ev.kind, to: to, reason: reason}
	}
	switch ev.kind {
	case evStart:
		i.starting = ev.attempt
		if !i.started.IsZero() {
			i.restarts++
		}
	case evStarted:
		i.starting = nil
		i.gen = ev.gen
		i.started = ev.now
		i.lastUsed = ev.now // a start is a use: its waiting callers are about to call
	case evStartFailed:
		i.starting = nil
		if from == phaseStarting {
			i.failLocked(ev)
		}
	case evExited:
		i.gen = nil
		if from == phaseReady && ev.fail != nil {
			i.failLocked(ev)
		}
	case evAcquire:
		i.inflight++
		i.lastUsed = ev.now
	case evRelease:
		i.inflight--
		i.calls++
		i.lastUsed = ev.now
		if ev.ok {
			i.failures = 0
		}
		if i.inflight == 0 && i.drained != nil {
			close(i.drained)
			i.drained = nil
		}
	case evRemove:
		i.removedWhy = ev.reason
		if i.inflight > 0 {
			i.drained = make(chan struct{})
		}
	case evWedged:
		i.lastErr = ev.fail.detail
		i.lastTail = ev.fail.tail
	}
	i.phase = to
	return nil
}

// next is the phase ev leads to from the current one, or why ev is not
// acceptable now (an event about another attempt or child, a start before
// the backoff is over, a release with no call in flight).
func (i *instance) next(ev *event) (phase, refusal) {
	from := i.phase
	switch ev.kind {
	case evStart:
		switch {
		case ev.attempt == nil:
			return from, noAttempt
		case from == phaseBackoff && ev.now.Before(i.backoffUntil):
			return from, backoffNotOver
		}
		return phaseStarting, accepted
	case evStarted, evStartFailed:
		switch {
		case i.starting == nil || ev.attempt != i.starting:
			return from, otherAttempt
		case ev.kind == evStarted && ev.gen == nil:
			return from, noChild
		case ev.kind == evStartFailed && ev.fail == nil:
			return from, noFailure
		case from != phaseStarting:
			return from, accepted
		case ev.kind == evStarted:
			return phaseReady, accepted
		}
		return i.failPhase(), accepted
	case evExited:
		switch {
		case ev.gen == nil || ev.gen != i.gen:
			return from, otherChild
		case from == phaseWedged:
			return phaseIdle, accepted
		case from != phaseReady:
			return from, accepted
		case ev.fail == nil:
			return phaseIdle, accepted
		}
		return i.failPhase(), accepted
	case evAcquire:
		if ev.gen == nil || ev.gen != i.gen {
			return from, otherChild
		}
		return from, accepted
	case evRelease:
		if i.inflight <= 0 {
			return from, nothingInFlight
		}
		return from, accepted
	case evWedged:
		switch {
		case ev.gen == nil || ev.gen != i.gen:
			return from, otherChild
		case ev.fail == nil:
			return from, noFailure
		}
		return phaseWedged, accepted
	case evRemove:
		return phaseStopping, accepted
	case evStopped:
		return phaseStopped, accepted
	}
	return from, unknownEvent
}

// failPhase is where one more failure leads.
func (i *instance) failPhase() phase {
	if i.failures+1 >= backoffAfter {
		return phaseBackoff
	}
	return phaseIdle
}

// failLocked records a failed start or a crash, and when the instance
// keeps failing, when it may start again. Only apply calls it.
func (i *instance) failLocked(ev *event) {
	i.failures++
	i.lastErr = ev.fail.detail
	i.lastTail = ev.fail.tail
	if i.failures >= backoffAfter {
		d := backoffBase << (i.failures - backoffAfter)
		if d > backoffMax || d <= 0 {
			d = backoffMax
		}
		i.backoffUntil = ev.now.Add(d)
	}
}
