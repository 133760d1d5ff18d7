package broker

import "mcpx.dev/mcpx/pool"

// AdoptSurvivors takes over the children a killed predecessor kept
// (config pool.survive; pool.AdoptSurvivors): call it once, after New,
// before serving, when no upgrade handed children over.
func (b *Broker) AdoptSurvivors() pool.Adopted { return b.pool.AdoptSurvivors() }
