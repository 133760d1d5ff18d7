package client

import (
	"slices"
	"testing"
)

// TestRootsMemo: a memo starts from what an earlier run learned and reports
// each change, and only changes, to whoever keeps it.
func TestRootsMemo(t *testing.T) {
	var told []bool
	learned := func(asks bool) { told = append(told, asks) }

	m := NewRootsMemo(false, false, learned)
	if asks, known := m.Asks(); known || asks {
		t.Errorf("new memo: asks %v, known %v; want nothing known", asks, known)
	}
	m.set(false)
	m.set(false) // no news
	m.set(true)  // the definition's children asked after all
	if asks, known := m.Asks(); !known || !asks {
		t.Errorf("after set(true): asks %v, known %v", asks, known)
	}
	if !slices.Equal(told, []bool{false, true}) {
		t.Errorf("learned was told %v, want [false true]", told)
	}

	told = nil
	prior := NewRootsMemo(false, true, learned)
	if asks, known := prior.Asks(); !known || asks {
		t.Errorf("memo from a prior run that never asks: asks %v, known %v", asks, known)
	}
	prior.set(false)
	if len(told) != 0 {
		t.Errorf("relearning what a prior run knew was reported: %v", told)
	}
	if asks, known := NewRootsMemo(true, true, nil).Asks(); !known || !asks {
		t.Errorf("memo from a prior run that asks: asks %v, known %v", asks, known)
	}
}
