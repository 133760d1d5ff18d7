package broker

import (
	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/pool"
)

// keepAlive sets what keeps d's children alive and warm (docs/children.md,
// "Health, min and warm"): the health check, min and warm, and the key
// known before any call — a global server's, the one key it has.
func keepAlive(d *pool.Server, s *config.Server) {
	if s.Health.On() {
		d.HealthInterval, d.HealthTimeout = s.Health.Interval.D(), s.Health.Timeout.D()
	}
	d.Min, d.Warm = s.Min, s.Warm
	if s.Scope == config.ScopeGlobal && (s.Min > 0 || s.Warm) {
		d.Keys = []pool.Target{{Server: d.Name, Key: globalKey}}
	}
}

// globalKey is the scope key of every caller of a global server.
const globalKey = "global"
