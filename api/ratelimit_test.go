package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// tokenDaemon is a daemon that mints tokens, serving the demo (global).
func tokenDaemon(t *testing.T) *apitest.Daemon {
	t.Helper()
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}), Tokens: is})
}

// TestRateLimitedCallerGets429: a load of REST calls from a token whose
// rate is 5/h, four callers at once: 5 are served, the rest answered 429
// with Retry-After and a problem naming the limit, while another token's
// calls at the same time are all served; the refusals are counted in
// /metrics; a bad rate is refused at minting, naming the accepted form.
func TestRateLimitedCallerGets429(t *testing.T) {
	d := tokenDaemon(t)
	alice := bearerClient(d, apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "alice", Rule: rights.Rule{Servers: []string{"demo"}, Rate: rights.Rate{Count: 5, Per: 3600e9}}}).Token)
	bob := bearerClient(d, apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "bob", Rule: rights.Rule{Servers: []string{"demo"}}}).Token)
	rt, _ := wire.Lookup(wire.OpCallTool)
	path := rt.Path("demo", "echo")

	var served, refused, bobServed atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				switch r := alice.Do(t, "POST", path, `{"message":"a"}`); r.StatusCode {
				case http.StatusOK:
					served.Add(1)
				case http.StatusTooManyRequests:
					p := r.Problem(t)
					secs, _ := strconv.Atoi(r.Header.Get("Retry-After"))
					if p.Kind() != wire.KindRateLimited || p.Limit == nil || *p.Limit != (wire.ProblemLimit{Kind: "caller-rate", Value: "5/h"}) ||
						secs < 60 || p.RetryAfter != secs || !strings.Contains(p.Detail, "retry in") {
						t.Errorf("429: Retry-After %q, problem %+v (limit %+v)", r.Header.Get("Retry-After"), p, p.Limit)
					}
					refused.Add(1)
				default:
					t.Errorf("alice: %d %s", r.StatusCode, r.Bytes)
				}
				if r := bob.Do(t, "POST", path, `{"message":"b"}`); r.StatusCode == http.StatusOK {
					bobServed.Add(1)
				} else {
					t.Errorf("bob: %d %s", r.StatusCode, r.Bytes)
				}
			}
		})
	}
	wg.Wait()
	if served.Load() != 5 || refused.Load() != 15 || bobServed.Load() != 20 {
		t.Errorf("alice: %d served, %d refused (want 5, 15); bob: %d served (want 20)", served.Load(), refused.Load(), bobServed.Load())
	}
	// A streamed call is refused before its stream opens: the same 429.
	if r := alice.Do(t, "POST", path, `{"message":"a"}`, "Accept", "text/event-stream"); r.StatusCode != http.StatusTooManyRequests ||
		r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Bytes), wire.KindRateLimited) {
		t.Errorf("a streamed call over the rate: %d %s %s, want 429 with Retry-After", r.StatusCode, r.Header.Get("Content-Type"), r.Bytes)
	}
	if r := bob.Do(t, "POST", path, `{"message":"b"}`, "Accept", "text/event-stream"); r.StatusCode != http.StatusOK ||
		!strings.Contains(string(r.Bytes), "event: result") {
		t.Errorf("bob's streamed call: %d %s, want the stream with its result", r.StatusCode, r.Bytes)
	}
	m := scrapeMetrics(t, d.TCP)
	if got := m.value("mcpx_rate_limited_total", "limit", "caller-rate", "server", "demo"); got != 16 {
		t.Errorf("mcpx_rate_limited_total{caller-rate,demo} = %v, want 16", got)
	}

	r := d.Unix.Do(t, "POST", "/v1/tokens", `{"sub":"x","servers":["demo"],"rate":"5/x"}`)
	if p := r.Problem(t); p.Status != 400 || !strings.Contains(p.Detail, `invalid rate "5/x"`) || !strings.Contains(p.Detail, `"100/m"`) {
		t.Errorf("mint with a bad rate: %+v, want 400 naming the rate and its form", p)
	}
}
