package daemon_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/observe/webhook"
	"mcpx.dev/mcpx/wire"
)

var owner = broker.Caller{Name: "local:test", Via: "unix", Local: true, Owner: true, Rights: rights.All()}

// webhookDaemon starts a daemon serving the demo server call-scoped (every
// call spawns a child and stops it: three lifecycle events a call) with
// the given webhooks, closed at cleanup.
func webhookDaemon(t *testing.T, hooks []map[string]any, env map[string]string) *daemon.Daemon {
	t.Helper()
	proctest.CheckNoLeaks(t)
	doc, _ := json.Marshal(map[string]any{
		"servers": map[string]any{"demo": map[string]any{"command": os.Args[0], "scope": "call",
			"env": map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}}},
		"webhooks": hooks,
	})
	cfg, err := config.Parse(doc, "test.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(daemon.Options{Config: cfg, StateDir: filepath.Join(t.TempDir(), "state"), Drain: time.Second,
		Getenv:  func(k string) string { return env[k] },
		Webhook: webhook.Options{Queue: 8, Attempts: 2, Backoff: time.Millisecond, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// callRate makes n calls, each on a new child, and returns calls per second;
// every call must succeed.
func callRate(t *testing.T, d *daemon.Daemon, n int) float64 {
	t.Helper()
	call := func(i int) {
		r := broker.Request{Caller: owner, Server: "demo"}
		if _, err := d.Broker.CallTool(t.Context(), r, "echo", json.RawMessage(`{"message":"hi"}`), nil); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	call(-1) // a warm-up, unmeasured: the first start pays for cold caches
	start := time.Now()
	for i := range n {
		call(i)
	}
	return float64(n) / time.Since(start).Seconds()
}

// TestWebhooksSignedEvents: a receiver gets the daemon's lifecycle events
// as JSON documents, signed with the secret the config names as
// ${env:NAME}, without the children's stderr.
func TestWebhooksSignedEvents(t *testing.T) {
	var mu sync.Mutex
	var docs []wire.LifecycleEvent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify([]byte("k3y"), r.Header.Get(webhook.HeaderTimestamp), r.Header.Get(webhook.HeaderSignature), body, time.Now(), time.Minute); err != nil {
			t.Errorf("delivery does not verify: %v", err)
		}
		var doc wire.LifecycleEvent
		if err := json.Unmarshal(body, &doc); err != nil || strings.Contains(string(body), "stderrTail") {
			t.Errorf("body %s: %v, want a lifecycle event without stderrTail", body, err)
		}
		mu.Lock()
		docs = append(docs, doc)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	d := webhookDaemon(t, []map[string]any{{"url": srv.URL, "events": []string{"spawn", "ready"}, "secret": "${env:HOOK_KEY}"}},
		map[string]string{"HOOK_KEY": "k3y"})
	callRate(t, d, 2)
	testenv.WaitFor(t, "six events delivered", func() bool { return d.Webhooks.Stats()[0].Delivered == 6 })
	mu.Lock()
	defer mu.Unlock()
	for _, doc := range docs {
		if (doc.Kind != "spawn" && doc.Kind != "ready") || doc.Server != "demo" || doc.ID == 0 {
			t.Errorf("event %+v, want a spawn or ready of demo with its id", doc)
		}
	}
}

// TestWebhooksSlowNoCall: receivers that hang or answer 500 slow no call.
// The same calls run on a daemon without webhooks and on one with both;
// the ratio of their rates is logged (not asserted: no wall-clock
// assertions), every call succeeds, the hanging receiver's queue stays
// within its bound and its overflow is dropped and counted, and the 500
// receiver's events are retried, then given up and counted.
func TestWebhooksSlowNoCall(t *testing.T) {
	const calls = 20
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	var fails sync.Map
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := fails.LoadOrStore(r.Header.Get(webhook.HeaderDelivery), new(int))
		*n.(*int)++
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(bad.Close)

	base := callRate(t, webhookDaemon(t, nil, nil), calls)
	hung := webhookDaemon(t, []map[string]any{{"url": hang.URL, "secret": "x"}}, nil)
	withHang := callRate(t, hung, calls)
	d := webhookDaemon(t, []map[string]any{{"url": hang.URL, "secret": "x"}, {"url": bad.URL, "secret": "x"}}, nil)
	withBoth := callRate(t, d, calls)
	t.Logf("calls/s: %.1f without webhooks; %.1f with a hanging receiver (ratio %.2f); %.1f with a hanging and a failing one (ratio %.2f: the failing one's retries share the CPU)",
		base, withHang, withHang/base, withBoth, withBoth/base)

	// Given up, each after its retry: an event dequeued and between its
	// retry and its failure is neither queued nor failed yet.
	testenv.WaitFor(t, "the failing receiver's events given up", func() bool {
		st := d.Webhooks.Stats()[1]
		return st.Failed > 0 && st.Queued == 0 && st.Retries == st.Failed
	})
	for _, st := range []webhook.Stats{hung.Webhooks.Stats()[0], d.Webhooks.Stats()[0]} {
		if st.Queued > 8 || st.Dropped == 0 || st.Delivered != 0 {
			t.Errorf("hanging receiver: %+v, want at most 8 queued, the rest dropped", st)
		}
	}
	st := d.Webhooks.Stats()
	if st[1].Retries != st[1].Failed || st[1].Delivered != 0 {
		t.Errorf("failing receiver: %+v, want each event tried twice then given up", st[1])
	}
	var b strings.Builder
	if err := d.Metrics.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf(`mcpx_webhook_dropped_total{webhook="0"} %d`, st[0].Dropped),
		`mcpx_webhook_failed_total{webhook="1"}`, `mcpx_webhook_delivered_total{webhook="1"} 0`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestWebhookSecretUnset: a secret naming a variable the daemon lacks
// stops the start, naming the webhook and the variable.
func TestWebhookSecretUnset(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"webhooks": [{"url": "https://hooks.example.com/x", "secret": "${env:NOPE}"}]}`), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = daemon.New(daemon.Options{Config: cfg, StateDir: filepath.Join(t.TempDir(), "state"), Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "webhooks[0].secret") || !strings.Contains(err.Error(), "NOPE") {
		t.Errorf("err = %v, want one naming webhooks[0].secret and NOPE", err)
	}
}

// TestWebhookEventsAreTheLifecycleEvents: the kinds a webhook may ask for
// (config.WebhookEvents, which the config checks names against) are every
// lifecycle event /v1/events streams (the pool's, and the broker's own:
// reload, tool-changed, tool-flagged).
func TestWebhookEventsAreTheLifecycleEvents(t *testing.T) {
	var want []string
	for _, k := range wire.LifecycleEvents() {
		if k != wire.EventGap {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(config.WebhookEvents))
	if !slices.Equal(got, want) {
		t.Errorf("config.WebhookEvents = %v, want %v", got, want)
	}
}
