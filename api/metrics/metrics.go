// Package metrics is the daemon's Prometheus metrics: tool calls by
// server, tool and outcome with their latency, instances by state, the
// pool's lifecycle counters, authentication denials by reason, nix
// resolutions, suppressed child stderr lines and the call log's drops.
//
//	m := metrics.New(b, version) // b *broker.Broker; observes its calls from now on
//	m.AuthDenied("token-expired")
//	err := m.Write(w)           // the text exposition format, ContentType
//
// # Cardinality
//
// No label carries a session, a scope key, a cwd, a caller or anything else
// a caller chooses: a daemon that serves a thousand sessions exports the
// series it exported for one. The server label is a configured server's
// name; the tool label a tool its child listed, at most MaxToolsPerServer
// of them per server; anything else is "other". Authentication denial
// reasons are a fixed list (package api).
//
// # Sources
//
// Calls and denials are counted as they happen (Broker.ObserveCalls, and
// AuthDenied from package api). Everything else is read from the broker
// at scrape time (Stats, Counters, Instances, RecordsStatus, NixStats), so
// it agrees with /v1/instances and /v1/events and costs nothing between
// scrapes.
package metrics

import (
	"io"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"mcpx.dev/mcpx/broker"
)

// ContentType is the media type of Write's output: the Prometheus text
// exposition format, version 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// MaxToolsPerServer bounds the tool label's values per server: a child
// that lists more tools than this (or keeps listing new ones) has its
// later tools counted as "other".
const MaxToolsPerServer = 256

// Other is the label value of a server or tool that is not one of the
// configured servers or their listed tools.
const Other = "other"

// latencyBuckets span a warm call's millisecond to a slow tool's minutes.
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// Metrics is one daemon's registry. Its methods are safe for concurrent
// use; a nil *Metrics counts nothing.
type Metrics struct {
	reg     *prometheus.Registry
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	denials *prometheus.CounterVec

	mu    sync.Mutex
	tools map[string]map[string]bool // guarded by mu; the tool labels in use, by server
}

// New returns the metrics of b and starts observing b's tool calls.
// version is reported as mcpx_build_info's label.
func New(b *broker.Broker, version string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpx_tool_calls_total",
			Help: "Tool calls that finished, by server, tool and outcome (ok, isError, error) and, for errors, the broker's error kind.",
		}, []string{"server", "tool", "outcome", "kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpx_tool_call_duration_seconds",
			Help:    "How long tool calls took, from the broker taking the call to its result, by server and tool.",
			Buckets: latencyBuckets,
		}, []string{"server", "tool"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpx_auth_denials_total",
			Help: "Requests refused by authentication or by the caller's rights, by reason.",
		}, []string{"reason"}),
		tools: map[string]map[string]bool{},
	}
	m.reg.MustRegister(m.calls, m.latency, m.denials,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "mcpx_build_info",
			Help:        "Always 1; the daemon's version as a label.",
			ConstLabels: prometheus.Labels{"version": version},
		}, func() float64 { return 1 }),
		&brokerCollector{b: b},
	)
	b.ObserveCalls(m.observe)
	return m
}

// observe counts one finished call (a broker.ObserveCalls function).
func (m *Metrics) observe(ev broker.CallEvent) {
	server, tool := m.labels(ev.Server, ev.Tool)
	kind := ""
	if ev.Outcome == broker.OutcomeFailed {
		kind = string(ev.Kind)
	}
	m.calls.WithLabelValues(server, tool, string(ev.Outcome), kind).Inc()
	m.latency.WithLabelValues(server, tool).Observe(ev.Duration.Seconds())
}

// labels bounds a call's server and tool labels (see Cardinality).
func (m *Metrics) labels(server, tool string) (string, string) {
	if server == "" {
		return Other, Other
	}
	if tool == "" {
		return server, Other
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	known := m.tools[server]
	if known == nil {
		known = map[string]bool{}
		m.tools[server] = known
	}
	if !known[tool] {
		if len(known) >= MaxToolsPerServer {
			return server, Other
		}
		known[tool] = true
	}
	return server, tool
}

// AuthDenied counts one request refused for reason, which must be one of a
// fixed set of words (the caller's code names them, never the request).
func (m *Metrics) AuthDenied(reason string) {
	if m == nil {
		return
	}
	m.denials.WithLabelValues(reason).Inc()
}

// Write writes every metric in the text exposition format (ContentType).
func (m *Metrics) Write(w io.Writer) error {
	families, err := m.reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

// brokerCollector reads the broker's own counters at scrape time.
type brokerCollector struct{ b *broker.Broker }

var (
	descInstances = prometheus.NewDesc("mcpx_instances",
		"Pooled instances by server and state (starting, ready, backoff, wedged, stopping, stopped).", []string{"server", "state"}, nil)
	descEvents = prometheus.NewDesc("mcpx_lifecycle_events_total",
		"Instance lifecycle events by server and kind (spawn, ready, crash, exit, wedged, backoff, restart, evict, reap), as /v1/events streams them.", []string{"server", "event"}, nil)
	descSuppressed = prometheus.NewDesc("mcpx_child_stderr_suppressed_lines_total",
		"Child stderr lines kept out of the log by its rate limit (they are still in the instance's stderr tail), by server.", []string{"server"}, nil)
	descQueue = prometheus.NewDesc("mcpx_pool_queue_length",
		"Callers waiting in line for room for a new instance right now.", nil, nil)
	descRecordsOn = prometheus.NewDesc("mcpx_records_enabled",
		"1 if the call log (records) is on.", nil, nil)
	descRecords = prometheus.NewDesc("mcpx_records_total",
		"Call records by fate: written to disk, dropped (the writer was behind), failed (the directory or disk failed).", []string{"fate"}, nil)
	descEgress = prometheus.NewDesc("mcpx_egress_total",
		"Confined children's connections through the egress proxy by server and decision: allowed, refused (each logged with server, instance and host) and failed (allowed, but the name did not resolve or the host did not answer).", []string{"server", "decision"}, nil)
	descNix = prometheus.NewDesc("mcpx_nix_resolutions_total",
		"nix runs by what they did (resolve: a nix: program spec locked and built; capture: an execution environment captured) and outcome; cache hits run no nix and are not counted.", []string{"op", "outcome"}, nil)
)

// poolCounters are the pool-wide counters of broker.Stats, by metric.
var poolCounters = []struct {
	desc *prometheus.Desc
	get  func(broker.Stats) int64
}{
	{prometheus.NewDesc("mcpx_pool_spawns_total", "Children started (initialize answered).", nil, nil), func(s broker.Stats) int64 { return s.Spawns }},
	{prometheus.NewDesc("mcpx_pool_restarts_total", "Starts of an instance that had run a child before.", nil, nil), func(s broker.Stats) int64 { return s.Restarts }},
	{prometheus.NewDesc("mcpx_pool_start_failures_total", "Starts that failed or timed out.", nil, nil), func(s broker.Stats) int64 { return s.StartFailures }},
	{prometheus.NewDesc("mcpx_pool_crashes_total", "Running children that exited unexpectedly.", nil, nil), func(s broker.Stats) int64 { return s.Crashes }},
	{prometheus.NewDesc("mcpx_pool_wedged_total", "Running children found silent (a call timed out, or a health check's ping went unanswered), and killed.", nil, nil), func(s broker.Stats) int64 { return s.Wedged }},
	{prometheus.NewDesc("mcpx_pool_evictions_total", "Idle instances stopped to make room for another key.", nil, nil), func(s broker.Stats) int64 { return s.Evictions }},
	{prometheus.NewDesc("mcpx_pool_reaps_total", "Instances stopped for idleness or because their owner went away.", nil, nil), func(s broker.Stats) int64 { return s.Reaps }},
	{prometheus.NewDesc("mcpx_pool_waits_total", "Callers that waited in line for room for a new instance.", nil, nil), func(s broker.Stats) int64 { return s.Waits }},
	{prometheus.NewDesc("mcpx_pool_exhausted_total", "Calls refused because the pool stayed full (503).", nil, nil), func(s broker.Stats) int64 { return s.Exhausted }},
}

// states are the API's instance states, each exported (0 or more) for
// every configured server, so that series do not come and go.
var states = broker.InstanceStates()

func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInstances, descEvents, descSuppressed, descQueue, descRecordsOn, descRecords, descNix, descRefused, descEgress} {
		ch <- d
	}
	for _, pc := range poolCounters {
		ch <- pc.desc
	}
}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}

	st := c.b.Stats()
	for _, pc := range poolCounters {
		counter(pc.desc, pc.get(st))
	}
	gauge(descQueue, st.Queued)

	byState := map[string]map[string]int64{}
	for _, name := range c.b.ServerNames() {
		byState[name] = map[string]int64{}
	}
	for _, inst := range c.b.Instances() {
		if byState[inst.Server] == nil {
			byState[inst.Server] = map[string]int64{} // removed by a reload, still draining
		}
		byState[inst.Server][string(inst.State)]++
	}
	for server, n := range byState {
		for _, s := range states {
			gauge(descInstances, n[s], server, s)
		}
	}

	for _, sc := range c.b.Counters() {
		for kind, n := range sc.Events {
			counter(descEvents, n, sc.Server, string(kind))
		}
		counter(descSuppressed, sc.StderrSuppressed, sc.Server)
	}

	c.collectRefusals(counter)
	for server, e := range c.b.EgressCounts() {
		counter(descEgress, int64(e.Allowed), server, "allowed")
		counter(descEgress, int64(e.Refused), server, "refused")
		counter(descEgress, int64(e.Failed), server, "failed")
	}

	on, rc := c.b.RecordsStatus()
	gauge(descRecordsOn, bool01(on))
	counter(descRecords, rc.Written, "written")
	counter(descRecords, rc.Dropped, "dropped")
	counter(descRecords, rc.Failed, "failed")

	if ns, ok := c.b.NixStats(); ok {
		counter(descNix, ns.Resolved, "resolve", "ok")
		counter(descNix, ns.ResolveFailed, "resolve", "error")
		counter(descNix, ns.Captured, "capture", "ok")
		counter(descNix, ns.CaptureFailed, "capture", "error")
	}
}

func bool01(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
