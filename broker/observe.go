package broker

import (
	"slices"
	"time"

	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/observe/calllog"
)

// CallEvent is one finished tool call as an observer sees it
// (Broker.ObserveCalls). Its names come from the config and the children,
// never from a caller's free text alone, so that a metric labelled by them
// stays bounded however callers misbehave.
type CallEvent struct {
	// Server is the server called; "" when the call named none the caller
	// may use (unknown, or not in its rights).
	Server string
	// Tool is the tool called; "" unless the server's child listed it (a
	// call that failed before the child was asked has "").
	Tool string
	// Key is the scope key the call landed on; "" when Server is.
	// Unbounded (one per session): no metric label.
	Key      string
	Caller   string    // the caller's name, as the call log records it
	Via      string    // how it reached the daemon (Caller.Via)
	Time     time.Time // when the call began
	Outcome  Outcome
	Kind     Kind // the error's kind, for OutcomeFailed
	Duration time.Duration
}

// Outcome is how a tool call ended, as the call log records it
// (calllog.Outcome).
type Outcome calllog.Outcome

// The outcomes of a call.
const (
	OutcomeOK      = Outcome(calllog.OK)      // the tool answered and did not set isError
	OutcomeIsError = Outcome(calllog.IsError) // the tool answered with isError: true
	OutcomeFailed  = Outcome(calllog.Failed)  // no result: the broker or the child failed
)

// ObserveCalls adds fn to the functions that see every finished tool call,
// from any listener, after the call returns. fn runs on the call's path:
// it must be quick and must not block. Safe for concurrent use; there is
// no removal (an observer lives as long as the broker).
func (b *Broker) ObserveCalls(fn func(CallEvent)) {
	for {
		old := b.observers.Load()
		var next []func(CallEvent)
		if old != nil {
			next = slices.Clone(*old)
		}
		next = append(next, fn)
		if b.observers.CompareAndSwap(old, &next) {
			return
		}
	}
}

// NixStats are the nix resolver's counts of resolutions and captures, by
// outcome (nixresolve.Stats).
type NixStats nixresolve.Stats

// NixStats returns what the nix resolver did since the daemon started;
// ok is false when the broker has none.
func (b *Broker) NixStats() (s NixStats, ok bool) {
	if b.nix == nil {
		return NixStats{}, false
	}
	return NixStats(b.nix.Stats()), true
}

// ServerNames returns the configured servers' names, sorted.
func (b *Broker) ServerNames() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	names := make([]string, 0, len(b.cfg.Servers))
	for name := range b.cfg.Servers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
