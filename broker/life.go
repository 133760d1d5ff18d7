package broker

import (
	"context"
	"strings"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/pool"
)

// keepAlive sets what keeps d's children alive and warm (docs/children.md,
// "Health, min and warm"): the health check, min and warm, and the key
// known before any call — a global server's, the one key it has.
func keepAlive(d *pool.Server, s *config.Server, defaults config.Defaults) {
	if s.Health.On() {
		d.HealthInterval, d.HealthTimeout = s.Health.Interval.D(), s.Health.Timeout.D()
		d.HealthURL, d.HealthExpect = s.Health.URL, s.Health.Expect
	}
	d.Min, d.Warm = s.Min, s.Warm
	if s.Scope == config.ScopeGlobal && (s.Min > 0 || s.Warm) {
		// The owner's instance: what a call of the owner's would use.
		d.Keys = []pool.Target{{Server: d.Name, Key: globalKey, Sandbox: EffectiveSandbox(s, defaults, Caller{Owner: true}, "")}}
	}
}

// globalKey is the scope key of every caller of a global server.
const globalKey = "global"

// Restarted is what RestartServer did (pool.Restarted).
type Restarted pool.Restarted

// Refreshed is what Refresh did (pool.Refreshed).
type Refreshed pool.Refreshed

// servedAs matches the pool names of a configured server: its own, and
// those of its project instances (name@hash).
func servedAs(server string) func(string) bool {
	return func(name string) bool { return name == server || strings.HasPrefix(name, server+"@") }
}

// RestartServer drains and replaces every instance of server, its project
// instances included (pool.Restart). KindNotFound, as every route answers
// it, if c may use no such server.
func (b *Broker) RestartServer(c Caller, server string) (Restarted, error) {
	if cfg := b.currentConfig(); cfg.Servers[server] == nil || !c.Rights.MayUse(server) {
		return Restarted{}, notFoundError(cfg.Servers, server, c)
	}
	res := b.pool.Restart(servedAs(server), "restarted by request")
	b.log.Info("restarted a server by request", "server", server, "replaced", len(res.Replaced), "stopped", len(res.Stopped))
	return Restarted(res), nil
}

// Refresh drops the schema cache of server ("" = every server) and lists
// the tools of its running children again, bounded by ctx (pool.Refresh).
func (b *Broker) Refresh(ctx context.Context, c Caller, server string) (Refreshed, error) {
	match := func(string) bool { return true }
	if server != "" {
		if cfg := b.currentConfig(); cfg.Servers[server] == nil || !c.Rights.MayUse(server) {
			return Refreshed{}, notFoundError(cfg.Servers, server, c)
		}
		match = servedAs(server)
	}
	res := b.pool.Refresh(ctx, match)
	for id, err := range res.Failed {
		b.log.Warn("refresh: listing a child's tools failed", "instance", id, "err", err)
	}
	return Refreshed(res), nil
}

// KillAll stops every child at once, cutting the calls in flight, and
// refuses new calls: a forced stop of the daemon (`mcpx daemon stop
// --force`). Close must still follow.
func (b *Broker) KillAll() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.log.Warn("stopping every child at once: a forced stop")
	b.pool.Close(ctx) //nolint:errcheck // Close returns nil; a second one at Close is harmless
}
