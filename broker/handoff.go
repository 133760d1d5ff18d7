package broker

import (
	"fmt"
	"strings"
	"time"

	"mcpx.dev/mcpx/pool"
)

// HandoffState is what the broker hands to the next image of the daemon
// (an upgrade in place): its pool's children, and what gives them their
// owners — the leases that keep lease: instances alive and the creators
// of caller-owned keys (who may see and stop them). It is persisted, in
// the daemon's handoff state file.
type HandoffState struct {
	Pool     pool.HandoffState `json:"pool"`
	Leases   []Lease           `json:"leases,omitempty"`
	Sessions []HandedSession   `json:"sessions,omitempty"`
}

// HandedSession is one entry of the session registry.
type HandedSession struct {
	Key     string        `json:"key"`
	Creator Creator       `json:"creator"`
	Name    string        `json:"name,omitempty"`
	Idle    time.Duration `json:"idle,omitempty"`
}

// Handoff freezes the pool and calls exec with what the next image of
// the daemon needs to adopt its children (pool.Pool.Handoff); exec is
// meant not to return. If it does, its error is returned and the broker
// goes on serving.
func (b *Broker) Handoff(exec func(HandoffState) error) error {
	return b.pool.Handoff(func(ps pool.HandoffState) error {
		st := HandoffState{Pool: ps}
		b.leases.mu.Lock()
		for _, le := range b.leases.m {
			st.Leases = append(st.Leases, *le)
		}
		b.leases.mu.Unlock()
		b.sessions.mu.Lock()
		for key, m := range b.sessions.m {
			st.Sessions = append(st.Sessions, HandedSession{Key: key, Creator: m.creator, Name: m.name, Idle: m.idle})
		}
		b.sessions.mu.Unlock()
		return exec(st)
	})
}

// Upgrade describes a finished upgrade for its lifecycle event.
type Upgrade struct {
	FromVersion, ToVersion string
	FromBinary, ToBinary   string // the binaries' identities (package pool/execid)
	Generation             int
}

// Adopt takes over what a predecessor handed over (call it once, before
// serving): its leases and session registry first, so that no adopted
// instance is taken for ownerless, then its children; and records an
// EventUpgrade saying what was adopted and what replaced.
func (b *Broker) Adopt(st HandoffState, u Upgrade) pool.Adopted {
	b.leases.mu.Lock()
	for _, le := range st.Leases {
		b.leases.m[le.Key] = &le
	}
	b.leases.mu.Unlock()
	b.sessions.mu.Lock()
	for _, s := range st.Sessions {
		b.sessions.m[s.Key] = &sessionMeta{creator: s.Creator, name: s.Name, idle: s.Idle}
	}
	b.sessions.mu.Unlock()
	res := b.pool.Adopt(st.Pool)
	b.pool.Events().Add(pool.Event{Kind: pool.EventUpgrade, Reason: upgradeReason(u, res)})
	return res
}

func upgradeReason(u Upgrade, res pool.Adopted) string {
	list := func(ids []string) string {
		if len(ids) == 0 {
			return "none"
		}
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("generation %d: %s (%s) -> %s (%s); adopted %s; replaced %s",
		u.Generation, u.FromVersion, u.FromBinary, u.ToVersion, u.ToBinary, list(res.Adopted), list(res.Replaced))
}
