package client

import (
	"context"
	"sync/atomic"
	"time"

	"mcpx.dev/mcpx/internal/defaults"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// RootsMemo remembers whether the children of one server definition ask
// roots/list at start-up. Safe for concurrent use; the zero value knows
// nothing yet. The pool keeps one per server definition.
//
// Some servers (server-filesystem started without directory arguments)
// ask roots/list right after notifications/initialized and apply the
// answer asynchronously: a first call sent at once would find no allowed
// directory. Connect therefore waits, bounded, for that request and lets
// its answer settle; the memo spares children that never ask the wait
// after the first spawn.
type RootsMemo struct {
	state atomic.Int32 // memoUnknown, memoAsks or memoNever
	// learned, if set, is told each time the memo learns or changes its
	// mind, so that what it learned can outlive the process. Set before
	// the memo is shared.
	learned func(asks bool)
}

// NewRootsMemo returns a memo that starts from what an earlier run learned
// (known false: nothing) and tells learned, if not nil, whenever it learns
// something new.
func NewRootsMemo(asks, known bool, learned func(asks bool)) *RootsMemo {
	m := &RootsMemo{learned: learned}
	switch {
	case known && asks:
		m.state.Store(memoAsks)
	case known:
		m.state.Store(memoNever)
	}
	return m
}

// set records what a child did; it tells learned only about a change.
func (m *RootsMemo) set(asks bool) {
	v := int32(memoNever)
	if asks {
		v = memoAsks
	}
	if m.state.Swap(v) != v && m.learned != nil {
		m.learned(asks)
	}
}

const (
	memoUnknown = iota
	memoAsks
	memoNever
)

// Asks reports what has been learned: asks (true, true), never asks
// (false, true), or nothing yet (false, false).
func (m *RootsMemo) Asks() (asks, known bool) {
	switch m.state.Load() {
	case memoAsks:
		return true, true
	case memoNever:
		return false, true
	}
	return false, false
}

// DefaultRootsWait bounds the wait for a child's start-up roots/list when
// Options.RootsWait is zero (2s; the config's limits.rootsWait, stated,
// with why, in package internal/defaults).
const DefaultRootsWait = defaults.RootsWait

// A child is given rootsSettle plus four times a ping's round trip (longer
// on a loaded machine), at most maxRootsSettle, to apply the roots it asked
// for at start-up, after the ping has shown it read the answer.
// (server-filesystem resolves and stats each root on node's thread pool.)
const (
	rootsSettle    = 50 * time.Millisecond
	maxRootsSettle = 500 * time.Millisecond
)

// awaitStartupRoots makes sure, after initialize, that a child which asks
// roots/list at start-up has our answer, and has applied it, before its
// first call (only with a root and a memo):
//
//   - nothing known about the definition: probe with a ping. A server that
//     asks at start-up does so on notifications/initialized, so its request
//     arrives before its answer to anything sent after that (the reader
//     handles messages in order); a ping answered first means it does not
//     ask, which costs one round trip, not the RootsWait. A child that asks
//     later anyway turns the memo to "asks" for the next spawns (answer).
//   - known to ask: wait for the request, up to RootsWait.
//   - known not to ask: nothing.
//
// Once answered, a ping shows the child has read the answer, and a short
// settle lets it apply it; with Options.RootsSignalled the caller waits
// for the child to say so instead.
func (s *Session) awaitStartupRoots(ctx context.Context) {
	m := s.opts.RootsMemo
	if m == nil || s.opts.Root == "" || s.opts.RootsWait < 0 {
		return
	}
	asks, known := m.Asks()
	if known && !asks {
		return
	}
	wait := s.opts.RootsWait
	if wait == 0 {
		wait = DefaultRootsWait
	}
	if !known && !s.askedBeforePing(ctx, wait) {
		m.set(false)
		s.log.Debug("mcp child did not ask roots/list at start-up; not waiting for it again")
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-s.rootsAnswered:
	case <-timer.C:
		s.log.Debug("mcp child did not ask roots/list at start-up this time", "waited", wait)
		return
	case <-ctx.Done():
		return
	case <-s.done:
		return
	}
	m.set(true)
	if s.opts.RootsSignalled {
		return // the caller waits for the child to say it applied them
	}
	// The child has our answer; a ping's reply shows it has read it, and
	// a short pause lets it apply it (server-filesystem checks the
	// directories asynchronously).
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	if _, err := s.Call(pctx, jsonrpc.MethodPing, nil, nil); err != nil {
		s.log.Debug("ping after start-up roots/list", "err", err)
	}
	settle := time.NewTimer(min(rootsSettle+4*time.Since(start), maxRootsSettle))
	defer settle.Stop()
	select {
	case <-settle.C:
	case <-ctx.Done():
	}
}

// askedBeforePing pings the child (bounded by wait) and reports whether its
// roots/list request arrived before the ping's answer. A child that cannot
// answer a ping counts as asking: the caller then waits for it as for one.
func (s *Session) askedBeforePing(ctx context.Context, wait time.Duration) bool {
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_, err := s.Call(pctx, jsonrpc.MethodPing, nil, nil)
	select {
	case <-s.rootsAsked:
		return true
	default:
		return err != nil
	}
}
