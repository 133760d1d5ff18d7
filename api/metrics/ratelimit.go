package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"mcpx.dev/mcpx/broker"
)

var descRefused = prometheus.NewDesc("mcpx_rate_limited_total",
	"Calls refused by a rate limit (429), by the limit (caller-rate, server-rate, server-concurrency) and server.", []string{"limit", "server"}, nil)

// collectRefusals exports the broker's rate-limit refusals: every kind for
// every configured server (0 or more, so series do not come and go), a
// server no longer or not in the owner's config (a project's) as Other.
func (c *brokerCollector) collectRefusals(counter func(*prometheus.Desc, int64, ...string)) {
	n := map[broker.LimitKind]map[string]int64{}
	servers := c.b.ServerNames()
	for _, k := range broker.LimitKinds() {
		n[k] = map[string]int64{Other: 0}
		for _, s := range servers {
			n[k][s] = 0
		}
	}
	for _, r := range c.b.Refusals() {
		s := r.Server
		if _, known := n[r.Kind][s]; !known || s == "" {
			s = Other
		}
		n[r.Kind][s] += r.Count
	}
	for k, byServer := range n {
		for s, v := range byServer {
			counter(descRefused, v, string(k), s)
		}
	}
}
