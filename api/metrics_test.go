package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// scrape is one parsed /metrics answer.
type scrape map[string]*dto.MetricFamily

func scrapeMetrics(t *testing.T, c *apitest.Client) scrape {
	t.Helper()
	r := c.Do(t, "GET", "/metrics", "")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %s", r.StatusCode, r.Bytes)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("/metrics Content-Type = %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.Bytes))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, r.Bytes)
	}
	return fams
}

// value is the value of the series of family name whose labels include
// labels (name, value pairs): a counter's or gauge's value, a histogram's
// count. Absent is 0.
func (s scrape) value(name string, labels ...string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	var sum float64
	for _, m := range f.Metric {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		if !slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
			return false
		}
	}
	return true
}

// series lists every series as name{labels}, sorted.
func (s scrape) series() []string {
	var out []string
	for name, f := range s {
		for _, m := range f.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out = append(out, name+"{"+strings.Join(ls, ",")+"}")
		}
	}
	slices.Sort(out)
	return out
}

// TestMetricsCountCalls: /metrics parses as the Prometheus text format
// and its counters move by exactly what known calls and refusals did.
func TestMetricsCountCalls(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope":"global"}`}), StateDir: t.TempDir()})
	call := func(server, tool, args string) *apitest.Response {
		rt, _ := wire.Lookup(wire.OpCallTool)
		return d.Unix.Do(t, "POST", rt.Path(server, tool), args)
	}
	if r := call("demo", "echo", `{"message":"warm"}`); r.StatusCode != 200 {
		t.Fatalf("warm-up echo: %d %s", r.StatusCode, r.Bytes)
	}
	before := scrapeMetrics(t, d.TCP)

	for range 3 {
		if r := call("demo", "echo", `{"message":"a"}`); r.StatusCode != 200 {
			t.Fatalf("echo: %d %s", r.StatusCode, r.Bytes)
		}
	}
	if res := call("demo", "fail", `{"message":"b"}`).Result(t); !res.IsError {
		t.Fatalf("fail = %+v", res)
	}
	if r := call("demo", "no-such-tool", `{}`); r.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown tool: %d %s", r.StatusCode, r.Bytes)
	}
	if r := call("no-such-server", "echo", `{}`); r.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown server: %d %s", r.StatusCode, r.Bytes)
	}
	// Refusals: the wrong token, and a web page's Origin on TCP.
	if code, _ := get(t, d.TCP.Base+"/v1/servers", "Authorization", "Bearer nope", wire.HeaderClient, "t"); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	if code, _ := get(t, d.TCP.Base+"/v1/servers", "Authorization", "Bearer "+apitest.Token, "Origin", "http://example.com"); code != http.StatusForbidden {
		t.Fatalf("with Origin: %d", code)
	}

	after := scrapeMetrics(t, d.TCP)
	delta := func(name string, labels ...string) float64 {
		return after.value(name, labels...) - before.value(name, labels...)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mcpx_tool_calls_total", []string{"server", "demo", "tool", "echo", "outcome", "ok"}, 3},
		{"mcpx_tool_calls_total", []string{"server", "demo", "tool", "fail", "outcome", "isError"}, 1},
		{"mcpx_tool_calls_total", []string{"server", "demo", "tool", "other", "outcome", "error", "kind", string(broker.KindNotFound)}, 1},
		{"mcpx_tool_calls_total", []string{"server", "other", "tool", "other", "outcome", "error", "kind", string(broker.KindNotFound)}, 1},
		{"mcpx_tool_calls_total", nil, 6},
		{"mcpx_tool_call_duration_seconds", []string{"server", "demo", "tool", "echo"}, 3},
		{"mcpx_auth_denials_total", []string{"reason", "wrong-token"}, 1},
		{"mcpx_auth_denials_total", []string{"reason", "origin"}, 1},
		{"mcpx_records_total", []string{"fate", "dropped"}, 0},
		{"mcpx_pool_spawns_total", nil, 0},
	} {
		if got := delta(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v moved by %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mcpx_instances", []string{"server", "demo", "state", "ready"}, 1},
		{"mcpx_instances", []string{"server", "demo", "state", "starting"}, 0},
		{"mcpx_lifecycle_events_total", []string{"server", "demo", "event", "spawn"}, 1},
		{"mcpx_lifecycle_events_total", []string{"server", "demo", "event", "ready"}, 1},
		{"mcpx_pool_spawns_total", nil, 1},
		{"mcpx_pool_queue_length", nil, 0},
		{"mcpx_records_enabled", nil, 1},
		{"mcpx_build_info", []string{"version", "test"}, 1},
	} {
		if got := after.value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// A crash is counted as it is in /v1/events.
	if r := call("demo", "crash", `{}`); r.StatusCode != http.StatusBadGateway {
		t.Fatalf("crash: %d %s", r.StatusCode, r.Bytes)
	}
	crashed := scrapeMetrics(t, d.TCP)
	if got := crashed.value("mcpx_lifecycle_events_total", "server", "demo", "event", "crash"); got != 1 {
		t.Errorf("crash events = %v, want 1", got)
	}
	if got := crashed.value("mcpx_pool_crashes_total"); got != 1 {
		t.Errorf("mcpx_pool_crashes_total = %v, want 1", got)
	}
}

// TestMetricsCardinality: a thousand distinct sessions and cwds, and
// a thousand made-up tool names, add no series: no label carries them.
func TestMetricsCardinality(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope":"global"}`})})
	rt, _ := wire.Lookup(wire.OpCallTool)
	const n = 1000
	dirs := t.TempDir()
	for i := -1; i < n; i++ {
		if err := os.Mkdir(filepath.Join(dirs, strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	call := func(tool string, i int) *apitest.Response {
		return d.Unix.Do(t, "POST", rt.Path("demo", tool), `{"message":"x"}`,
			wire.HeaderSession, fmt.Sprintf("session-%d", i), wire.HeaderCwd, filepath.Join(dirs, strconv.Itoa(i)))
	}
	// Warm up every series the loop below touches: one of each call.
	if r := call("echo", -1); r.StatusCode != 200 {
		t.Fatalf("echo: %d %s", r.StatusCode, r.Bytes)
	}
	if r := call("made-up--1", -1); r.StatusCode != http.StatusNotFound {
		t.Fatalf("made-up tool: %d %s", r.StatusCode, r.Bytes)
	}
	before := scrapeMetrics(t, d.TCP)

	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if r := call("echo", i); r.StatusCode != 200 {
					t.Errorf("echo %d: %d %s", i, r.StatusCode, r.Bytes)
				}
				if r := call(fmt.Sprintf("made-up-%d", i), i); r.StatusCode != http.StatusNotFound {
					t.Errorf("made-up tool %d: %d %s", i, r.StatusCode, r.Bytes)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()

	after := scrapeMetrics(t, d.TCP)
	if got := after.value("mcpx_tool_calls_total", "tool", "echo") - before.value("mcpx_tool_calls_total", "tool", "echo"); got != n {
		t.Errorf("echo calls moved by %v, want %d", got, n)
	}
	if b, a := before.series(), after.series(); !slices.Equal(a, b) {
		t.Errorf("series changed: %d before, %d after\nbefore: %v\nafter: %v", len(b), len(a), b, a)
	}
}

// TestMetricsAdminOnly: a caller that is not an admin is refused, and the
// refusal is counted as one by its rights.
func TestMetricsAdminOnly(t *testing.T) {
	url := serveIdentified(t, func(r *http.Request) (broker.Caller, error) {
		return broker.Caller{Name: "dev@example.com", Via: wire.ViaTailnet, Rights: rights.Rights{{Servers: []string{}}}}, nil
	})
	code, body := get(t, url+"/metrics")
	if code != http.StatusForbidden || !strings.Contains(string(body), "admin") {
		t.Errorf("non-admin /metrics: %d %s", code, body)
	}
}
