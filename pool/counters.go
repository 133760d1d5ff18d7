package pool

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ServerCounters are one server's counters since the pool was made, for
// metrics: its lifecycle events by kind (counted where they are emitted,
// Pool.announceLocked, so they agree with /v1/events) and the stderr lines
// of its children that the log's rate limit suppressed. The servers are
// those ever configured: a server removed by a reload keeps its counts.
type ServerCounters struct {
	Server           string
	Events           map[EventKind]int64 // the caller owns the map
	StderrSuppressed int64
}

// counters holds ServerCounters by server. Events are counted under
// Pool.mu; suppressed stderr lines by each child's stderr reader, without
// it (a flooding child must not contend for the pool's lock).
type counters struct {
	mu sync.Mutex
	m  map[string]*serverCounters // guarded by mu
}

type serverCounters struct {
	events     map[EventKind]int64 // guarded by counters.mu
	suppressed atomic.Int64
}

func (c *counters) server(name string) *serverCounters {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serverLocked(name)
}

func (c *counters) serverLocked(name string) *serverCounters {
	if c.m == nil {
		c.m = map[string]*serverCounters{}
	}
	s := c.m[name]
	if s == nil {
		s = &serverCounters{events: map[EventKind]int64{}}
		c.m[name] = s
	}
	return s
}

func (c *counters) event(server string, kind EventKind) {
	c.mu.Lock()
	c.serverLocked(server).events[kind]++
	c.mu.Unlock()
}

// snapshot returns every server's counters, sorted by server.
func (c *counters) snapshot() []ServerCounters {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ServerCounters, 0, len(c.m))
	for name, s := range c.m {
		out = append(out, ServerCounters{Server: name, Events: maps.Clone(s.events), StderrSuppressed: s.suppressed.Load()})
	}
	slices.SortFunc(out, func(a, b ServerCounters) int { return strings.Compare(a.Server, b.Server) })
	return out
}

// Counters returns every server's counters, sorted by server. Pool-wide
// figures are in Stats.
func (p *Pool) Counters() []ServerCounters { return p.counters.snapshot() }
