package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// WebhookStats are one webhook's counters (package webhook).
type WebhookStats struct{ Delivered, Failed, Dropped, Retries int64 }

var (
	descHookDelivered = prometheus.NewDesc("mcpx_webhook_delivered_total",
		"Lifecycle events a webhook's receiver answered 2xx, by webhook (its index in the config's webhooks).", []string{"webhook"}, nil)
	descHookFailed = prometheus.NewDesc("mcpx_webhook_failed_total",
		"Lifecycle events given up after the receiver refused them or every attempt failed, by webhook.", []string{"webhook"}, nil)
	descHookDropped = prometheus.NewDesc("mcpx_webhook_dropped_total",
		"Lifecycle events dropped unsent because the webhook's queue was full (its receiver is slow or down), by webhook.", []string{"webhook"}, nil)
	descHookRetries = prometheus.NewDesc("mcpx_webhook_retries_total",
		"Delivery attempts after an event's first, by webhook.", []string{"webhook"}, nil)
)

// ReadWebhooks has m read the webhooks' counters from f at scrape time,
// f's i-th being the config's i-th webhook. Call it once.
func (m *Metrics) ReadWebhooks(f func() []WebhookStats) {
	if m == nil {
		return
	}
	m.reg.MustRegister(webhookCollector{f})
}

type webhookCollector struct{ stats func() []WebhookStats }

func (c webhookCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHookDelivered, descHookFailed, descHookDropped, descHookRetries} {
		ch <- d
	}
}

func (c webhookCollector) Collect(ch chan<- prometheus.Metric) {
	for i, s := range c.stats() {
		label := strconv.Itoa(i)
		for d, v := range map[*prometheus.Desc]int64{descHookDelivered: s.Delivered, descHookFailed: s.Failed, descHookDropped: s.Dropped, descHookRetries: s.Retries} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), label)
		}
	}
}
