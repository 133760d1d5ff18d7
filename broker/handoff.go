package broker

import (
	"fmt"
	"strings"

	"mcpx.dev/mcpx/pool"
)

// Handoff freezes the pool and calls exec with what the next image of
// the daemon needs to adopt its children (pool.Pool.Handoff); exec is
// meant not to return. If it does, its error is returned and the broker
// goes on serving.
func (b *Broker) Handoff(exec func(pool.HandoffState) error) error {
	return b.pool.Handoff(exec)
}

// Upgrade describes a finished upgrade for its lifecycle event.
type Upgrade struct {
	FromVersion, ToVersion string
	FromBinary, ToBinary   string // the binaries' identities (package pool/execid)
	Generation             int
}

// Adopt takes over the children a predecessor handed over (call it once,
// before serving) and records an EventUpgrade saying what was adopted and
// what replaced.
func (b *Broker) Adopt(st pool.HandoffState, u Upgrade) pool.Adopted {
	res := b.pool.Adopt(st)
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
