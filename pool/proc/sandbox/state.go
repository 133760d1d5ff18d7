package sandbox

import "net"

// State is what a Cell is made of after its child started: what the
// daemon hands to the next one (an upgrade in place, a restart after a
// crash) for a child that outlives it. A confined child stays confined
// by itself: Landlock, namespaces and rlimits are the process's and
// cannot be undone; the next daemon needs the State only to report the
// Enforcement, name a limit, and remove the cgroups.
type State struct {
	Policy      Policy      `json:"policy"`
	Enforcement Enforcement `json:"enforcement"`
	Cgroups     []cgroup    `json:"cgroups,omitempty"`
}

// State returns the Cell's State.
func (c *Cell) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return State{Policy: c.policy, Enforcement: c.enforcement, Cgroups: c.cgroups}
}

// Resume makes a Cell again of a State handed over by an earlier daemon,
// with the proxy listener it handed over too (nil if none). The Cell's
// child is already running: only Enforcement, Listener, Limit, State and
// Close apply.
func Resume(st State, listener net.Listener) *Cell {
	return &Cell{policy: st.Policy, enforcement: st.Enforcement, cgroups: st.Cgroups, listener: listener}
}
