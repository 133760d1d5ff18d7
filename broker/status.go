package broker

import "mcpx.dev/mcpx/pool"

// What the pool is doing, under the broker's names: the broker's callers
// (api, metrics) read instances, counters and lifecycle events here and
// never import the pool. Each type is the pool's value as a type of the
// broker's (not an alias): its fields are the pool's, filled by the pool
// alone, so a field the pool adds needs no edit here. The types of some
// fields stay the pool's (the string kinds State, CwdSource and EventKind,
// and Instance.Program); callers use them without naming them.

// Instance is a pooled child, as status shows it (pool.InstanceStatus).
type Instance pool.InstanceStatus

// InstanceStates lists every state an Instance may be in, as the API
// shows them, in the order of their lifecycle.
func InstanceStates() []string {
	return []string{string(pool.StateStarting), string(pool.StateReady), string(pool.StateBackoff),
		string(pool.StateWedged), string(pool.StateStopping), string(pool.StateStopped)}
}

// Stats are the pool-wide counters status shows (pool.Stats).
type Stats pool.Stats

// ServerCounters are one server's counters since the daemon started, for
// metrics (pool.ServerCounters): its lifecycle events by kind and its
// children's stderr lines the log's rate limit suppressed.
type ServerCounters pool.ServerCounters

// Event is one lifecycle event (pool.Event): an instance's spawn, ready,
// restart, evict, reap, crash, exit, backoff or wedged, or a config
// reload. IDs increase by one from 1, in the order the events happened.
type Event pool.Event

// Instances lists the pooled children, sorted by server then key.
func (b *Broker) Instances() []Instance { return instances(b.pool.Instances()) }

// instances converts the pool's snapshots; the caller owns the result.
func instances(ps []pool.InstanceStatus) []Instance {
	out := make([]Instance, len(ps))
	for i, p := range ps {
		out[i] = Instance(p)
	}
	return out
}

// EgressCounts are each server's egress proxy decisions since the daemon
// started (its confined children's connections: allowed, refused, failed).
func (b *Broker) EgressCounts() map[string]EgressCounts {
	out := map[string]EgressCounts{}
	for server, c := range b.pool.EgressCounts() {
		out[server] = EgressCounts(c)
	}
	return out
}

// EgressCounts are one server's egress proxy decisions (egress.Counts).
type EgressCounts struct{ Allowed, Refused, Failed uint64 }

// Stats returns the pool-wide counters (spawns, evictions, 503s, ...).
func (b *Broker) Stats() Stats { return Stats(b.pool.Stats()) }

// Counters returns the pool's per-server counters (lifecycle events,
// suppressed stderr lines), sorted by server.
func (b *Broker) Counters() []ServerCounters {
	cs := b.pool.Counters()
	out := make([]ServerCounters, len(cs))
	for i, c := range cs {
		out[i] = ServerCounters(c)
	}
	return out
}

// EventsSince returns the lifecycle events after id (all kept ones for 0),
// oldest first; how many events after id are no longer kept (the newest
// pool.DefaultEventBuffer are); and a channel closed when the next event
// happens. The events are the pool's and the broker's reloads. The caller
// owns the slice.
func (b *Broker) EventsSince(id uint64) (evs []Event, lost uint64, more <-chan struct{}) {
	pe, lost, more := b.pool.Events().Since(id)
	evs = make([]Event, len(pe))
	for i, e := range pe {
		evs[i] = Event(e)
	}
	return evs, lost, more
}
