package pool

import (
	"errors"
	"go/ast"
	"go/token"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The pool's tests fail loudly on an illegal transition, in every test of
// this binary (the external pool_test package's included).
func init() { panicOnIllegal = true }

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// lifecycleFixture is an instance in phase ph holding everything any event
// could need (an attempt under way, a running child, a call in flight,
// enough failures to be backing off), whether or not ph could have it: an
// illegal edge must then be refused by the edge table itself.
func lifecycleFixture(ph phase, failures int) (*instance, *startAttempt, *generation) {
	a, g := &startAttempt{done: make(chan struct{})}, &generation{}
	return &instance{
		id: "demo-1", def: &Server{Name: "demo"},
		phase: ph, starting: a, gen: g, inflight: 1,
		failures: failures, backoffUntil: t0,
	}, a, g
}

// lifecycleEvent is a well-formed ev for an instance from lifecycleFixture.
func lifecycleEvent(kind eventKind, a *startAttempt, g *generation) event {
	ev := event{kind: kind, now: t0.Add(time.Hour), ok: true}
	switch kind {
	case evStart:
		ev.attempt = &startAttempt{done: make(chan struct{})}
	case evStarted:
		ev.attempt, ev.gen = a, &generation{}
	case evStartFailed:
		ev.attempt, ev.fail = a, &failure{"boom", "stderr"}
	case evExited:
		ev.gen, ev.fail = g, &failure{"exited", "stderr"}
	case evAcquire:
		ev.gen = g
	case evWedged:
		ev.gen, ev.fail = g, &failure{"wedged", "stderr"}
	}
	return ev
}

// TestLifecycleEdges drives every event in every phase: an event with an
// edge lands on one of its edges' targets, every other one is refused and
// leaves the instance untouched.
func TestLifecycleEdges(t *testing.T) {
	for from := range numPhases {
		for kind := range numEvents {
			for _, failures := range []int{0, backoffAfter - 1} {
				inst, a, g := lifecycleFixture(from, failures)
				before := *inst
				err := inst.apply(new(lifecycleEvent(kind, a, g)))
				legal := allowed[from][kind] != 0
				switch {
				case legal && err != nil:
					t.Errorf("%s in %s (failures %d): refused: %v", kind, from, failures, err)
				case legal && !(edge{from, kind, inst.phase}).allowed():
					t.Errorf("%s in %s (failures %d): landed in %s, which no edge allows", kind, from, failures, inst.phase)
				case !legal && err == nil:
					t.Errorf("%s in %s: accepted (now %s), want refused", kind, from, inst.phase)
				case !legal && !reflect.DeepEqual(*inst, before):
					t.Errorf("%s in %s: refused but changed the instance", kind, from)
				case !legal:
					var te *transitionError
					if !errors.As(err, &te) || te.from != from || te.ev != kind {
						t.Errorf("%s in %s: error %v, want a transitionError naming both", kind, from, err)
					}
				}
			}
		}
	}
}

func TestLifecycleFailuresLeadToBackoff(t *testing.T) {
	for _, tc := range []struct {
		from     phase
		kind     eventKind
		failures int
		noFail   bool
		want     phase
	}{
		{phaseStarting, evStartFailed, 0, false, phaseIdle},
		{phaseStarting, evStartFailed, backoffAfter - 1, false, phaseBackoff},
		{phaseReady, evExited, 0, false, phaseIdle},
		{phaseReady, evExited, backoffAfter - 1, false, phaseBackoff},
		{phaseReady, evExited, backoffAfter - 1, true, phaseIdle}, // an expired session is no failure
		{phaseStopping, evExited, backoffAfter - 1, false, phaseStopping},
		{phaseStopping, evStartFailed, backoffAfter - 1, false, phaseStopping},
		{phaseWedged, evExited, backoffAfter - 1, false, phaseIdle}, // a wedge is replaced at once
	} {
		inst, a, g := lifecycleFixture(tc.from, tc.failures)
		ev := lifecycleEvent(tc.kind, a, g)
		if tc.noFail {
			ev.fail = nil
		}
		if err := inst.apply(&ev); err != nil {
			t.Fatalf("%s in %s: %v", tc.kind, tc.from, err)
		}
		if inst.phase != tc.want {
			t.Errorf("%s in %s with %d failures (fail %v): %s, want %s", tc.kind, tc.from, tc.failures, ev.fail != nil, inst.phase, tc.want)
		}
		counted := (inst.phase == phaseIdle || inst.phase == phaseBackoff) && tc.from != phaseWedged
		if counted && ev.fail != nil && inst.failures != tc.failures+1 {
			t.Errorf("%s in %s: failures %d, want %d", tc.kind, tc.from, inst.failures, tc.failures+1)
		}
		if !counted && inst.failures != tc.failures {
			t.Errorf("%s in %s: failures %d, want unchanged %d", tc.kind, tc.from, inst.failures, tc.failures)
		}
		if inst.phase == phaseBackoff && inst.backoffUntil != ev.now.Add(backoffBase) {
			t.Errorf("%s in %s: backoff until %v, want %v", tc.kind, tc.from, inst.backoffUntil, ev.now.Add(backoffBase))
		}
	}
}

// TestLifecyclePreconditions: an event on a legal edge is still refused
// when it is about another attempt or child, or comes too early.
func TestLifecyclePreconditions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		from  phase
		kind  eventKind
		tweak func(*instance, *event)
	}{
		{"start before the backoff is over", phaseBackoff, evStart, func(i *instance, ev *event) { ev.now = i.backoffUntil.Add(-time.Millisecond) }},
		{"start with no attempt", phaseIdle, evStart, func(_ *instance, ev *event) { ev.attempt = nil }},
		{"started by another attempt", phaseStarting, evStarted, func(_ *instance, ev *event) { ev.attempt = &startAttempt{} }},
		{"started with no child", phaseStarting, evStarted, func(_ *instance, ev *event) { ev.gen = nil }},
		{"failed with no failure", phaseStarting, evStartFailed, func(_ *instance, ev *event) { ev.fail = nil }},
		{"failed with nothing under way", phaseStarting, evStartFailed, func(i *instance, _ *event) { i.starting = nil }},
		{"another child exited", phaseReady, evExited, func(_ *instance, ev *event) { ev.gen = &generation{} }},
		{"acquire another child", phaseReady, evAcquire, func(_ *instance, ev *event) { ev.gen = &generation{} }},
		{"another child wedged", phaseReady, evWedged, func(_ *instance, ev *event) { ev.gen = &generation{} }},
		{"wedged with no reason", phaseReady, evWedged, func(_ *instance, ev *event) { ev.fail = nil }},
		{"release with no call in flight", phaseReady, evRelease, func(i *instance, _ *event) { i.inflight = 0 }},
		{"unknown event", phaseReady, numEvents, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst, a, g := lifecycleFixture(tc.from, backoffAfter)
			ev := lifecycleEvent(tc.kind, a, g)
			if tc.tweak != nil {
				tc.tweak(inst, &ev)
			}
			before := *inst
			if err := inst.apply(&ev); err == nil {
				t.Fatalf("accepted (now %s), want refused", inst.phase)
			}
			if !reflect.DeepEqual(*inst, before) {
				t.Errorf("refused but changed the instance")
			}
		})
	}
}

func TestIllegalTransitionPanicsInTests(t *testing.T) {
	p := &Pool{log: slog.New(slog.DiscardHandler)}
	inst, _, _ := lifecycleFixture(phaseStopped, 0)
	defer func() {
		var te *transitionError
		if err, _ := recover().(error); !errors.As(err, &te) {
			t.Errorf("recovered %v, want a *transitionError", err)
		}
	}()
	p.updateLocked(inst, &event{kind: evRemove, now: t0})
	t.Fatal("removing a stopped instance did not panic")
}

// lifecycleFields are the instance fields only apply may change.
var lifecycleFields = []string{"phase", "gen", "starting", "started", "lastUsed", "calls", "inflight",
	"restarts", "failures", "backoffUntil", "lastErr", "lastTail", "drained"}

// TestLifecycleFieldsChangeOnlyInApply reads the package's source: no
// function but apply (and the failLocked it calls) assigns, increments or
// takes the address of a lifecycle field. It matches by field name, so a
// new field of that name on another type must be renamed or listed here.
func TestLifecycleFieldsChangeOnlyInApply(t *testing.T) {
	forEachFunc(t, func(fset *token.FileSet, file string, fn *ast.FuncDecl) {
		if file == "lifecycle.go" && (fn.Name.Name == "apply" || fn.Name.Name == "failLocked") {
			return
		}
		check := func(x ast.Expr) {
			if sel, ok := ast.Unparen(x).(*ast.SelectorExpr); ok && slices.Contains(lifecycleFields, sel.Sel.Name) {
				t.Errorf("%s: %s changes lifecycle field %s outside apply", fset.Position(sel.Pos()), fn.Name.Name, sel.Sel.Name)
			}
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, x := range n.Lhs {
					check(x)
				}
			case *ast.IncDecStmt:
				check(n.X)
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					check(n.X)
				}
			}
			return true
		})
	})
}

// TestIllegalTransitionLoggedInDaemon: outside the pool's tests an illegal
// transition is refused and logged at error, and the instance is unchanged.
func TestIllegalTransitionLoggedInDaemon(t *testing.T) {
	panicOnIllegal = false
	defer func() { panicOnIllegal = true }()
	var logged strings.Builder
	p := &Pool{log: slog.New(slog.NewTextHandler(&logged, nil))}
	inst, _, _ := lifecycleFixture(phaseStopped, 0)
	before := *inst
	p.mu.Lock()
	ok := p.updateLocked(inst, &event{kind: evRemove, now: t0})
	p.unlock()
	if ok {
		t.Fatal("removing a stopped instance was accepted")
	}
	if !reflect.DeepEqual(*inst, before) {
		t.Error("refused but changed the instance")
	}
	if !strings.Contains(logged.String(), "level=ERROR") || !strings.Contains(logged.String(), "illegal remove") {
		t.Errorf("log = %q, want an error record naming the illegal event", logged.String())
	}
}
