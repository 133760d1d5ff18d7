package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
)

// limited is a remote caller of name whose grant has rate.
func limited(t *testing.T, name, rate string) broker.Caller {
	t.Helper()
	r, err := rights.ParseRate(rate)
	if err != nil {
		t.Fatal(err)
	}
	return broker.Caller{Name: name, Via: "tailnet", Rights: rights.Rights{{Rate: r}}}
}

// rateLimited returns err's limit if it is a KindRateLimited refusal.
func rateLimited(err error) (*broker.Error, bool) {
	var be *broker.Error
	if errors.As(err, &be) && be.Kind == broker.KindRateLimited && be.Limit != nil {
		return be, true
	}
	return nil, false
}

// TestCallerRateLimitUnderLoad: eight goroutines of one caller whose grant
// says 10/h make 40 calls: 10 (the burst) get through, the other 30 are
// refused naming the limit and when to retry, and counted; another caller
// without a rate, calling at the same time, and the owner are unaffected.
// (10/h refills one call every 6 minutes: no wall-clock race.)
func TestCallerRateLimitUnderLoad(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeGlobal})
	alice := req("demo", "")
	alice.Caller = limited(t, "alice", "10/h")
	bob := req("demo", "")
	bob.Caller = broker.Caller{Name: "bob", Via: "tailnet", Rights: rights.Rights{{}}}

	var ok, refused, bobOK atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 80)
	for range 8 {
		wg.Go(func() {
			for range 5 {
				_, err := b.CallTool(t.Context(), alice, "echo", json.RawMessage(`{"message":"a"}`), nil)
				if err == nil {
					ok.Add(1)
				} else if be, isLimit := rateLimited(err); isLimit && be.Limit.Kind == broker.LimitCallerRate && be.Limit.Value == "10/h" && be.RetryAfter > time.Minute {
					refused.Add(1)
				} else {
					errs <- err
				}
				if _, err := b.CallTool(t.Context(), bob, "echo", json.RawMessage(`{"message":"b"}`), nil); err != nil {
					errs <- err
				} else {
					bobOK.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	if ok.Load() != 10 || refused.Load() != 30 || bobOK.Load() != 40 {
		t.Errorf("alice: %d ok, %d refused (want 10, 30); bob: %d ok (want 40)", ok.Load(), refused.Load(), bobOK.Load())
	}
	_, err := b.CallTool(t.Context(), alice, "echo", json.RawMessage(`{"message":"a"}`), nil)
	if be, isLimit := rateLimited(err); !isLimit || !strings.Contains(be.Msg, "10/h") || !strings.Contains(be.Msg, "retry in") {
		t.Errorf("refusal %v does not name the limit and when to retry", err)
	}
	for range 20 {
		callText(t, b, req("demo", ""), "echo", `{"message":"owner"}`)
	}
	want := []broker.Refusal{{Kind: broker.LimitCallerRate, Server: "demo", Count: 31}}
	if got := b.Refusals(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("Refusals() = %+v, want %+v", got, want)
	}
}

// TestRateLimitsForwardedRequests: a prompt, a resource and a forwarded
// request count against the same rate as tool calls; listings do not.
func TestRateLimitsForwardedRequests(t *testing.T) {
	b := newDemoBroker(t, map[string]config.ScopeKind{"demo": config.ScopeGlobal})
	r := req("demo", "")
	r.Caller = limited(t, "carol", "3/h")
	if _, err := b.GetPrompt(t.Context(), r, "greet", map[string]string{"name": "Ada"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadResource(t.Context(), r, "demo://readme"); err != nil {
		t.Logf("read resource: %v (counted all the same)", err)
	}
	if _, err := b.Forward(t.Context(), r, "prompts/get", json.RawMessage(`{"name":"greet","arguments":{"name":"Ada"}}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Tools(t.Context(), r); err != nil {
		t.Errorf("listing over the rate: %v, want it served", err)
	}
	if _, err := b.CallTool(t.Context(), r, "echo", json.RawMessage(`{"message":"x"}`), nil); err == nil {
		t.Error("a fourth request under 3/h was served")
	} else if _, isLimit := rateLimited(err); !isLimit {
		t.Errorf("fourth request: %v, want rate-limited", err)
	}
}

// TestServerRateAndOwnerRate: a server's rate holds for every caller
// together, the owner included; limits.ownerRate limits the owner alone.
func TestServerRateAndOwnerRate(t *testing.T) {
	b := startDemoBroker(t, demoSetup{
		scopes: map[string]config.ScopeKind{"demo": config.ScopeGlobal, "free": config.ScopeGlobal},
		server: func(s *config.Server) {
			if s.Name == "demo" {
				s.Rate = rights.Rate{Count: 2, Per: time.Hour}
			}
		},
		config: func(c *config.Config) { c.Limits.OwnerRate = rights.Rate{Count: 4, Per: time.Hour} },
	})
	other := req("demo", "")
	other.Caller = broker.Caller{Name: "dave", Via: "tailnet", Rights: rights.Rights{{}}}
	callText(t, b, req("demo", ""), "echo", `{"message":"1"}`)
	callText(t, b, other, "echo", `{"message":"2"}`)
	_, err := b.CallTool(t.Context(), other, "echo", json.RawMessage(`{"message":"3"}`), nil)
	if be, isLimit := rateLimited(err); !isLimit || be.Limit.Kind != broker.LimitServerRate || be.Limit.Value != "2/h" {
		t.Errorf("third call to a 2/h server: %v, want server-rate 2/h", err)
	}
	// The owner: two calls above (one refused by the server's rate gave
	// its token back), two more to another server, then refused.
	callText(t, b, req("free", ""), "echo", `{"message":"3"}`)
	callText(t, b, req("free", ""), "echo", `{"message":"4"}`)
	callText(t, b, req("free", ""), "echo", `{"message":"5"}`)
	_, err = b.CallTool(t.Context(), req("free", ""), "echo", json.RawMessage(`{"message":"6"}`), nil)
	if be, isLimit := rateLimited(err); !isLimit || be.Limit.Kind != broker.LimitCallerRate || !strings.Contains(err.Error(), "limits.ownerRate") {
		t.Errorf("owner's fifth call under ownerRate 4/h: %v, want caller-rate naming limits.ownerRate", err)
	}
}

// TestMaxConcurrentHoldsUnderLoad: 64 concurrent calls of a url server
// whose maxConcurrent is 3 all succeed, and the child never sees more than
// 3 calls at once (counted in the tool); it does see
// 3, so the limit is what bounds them.
func TestMaxConcurrentHoldsUnderLoad(t *testing.T) {
	const limit, callers = 3, 64
	var inFlight, peak atomic.Int64
	hold := func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := demo.NewServer()
		mcp.AddTool(s, &mcp.Tool{Name: "hold", Description: "holds 20ms, counting the calls in flight"}, hold)
		return s
	}, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg, err := config.Parse([]byte(`{"servers": {"web": {"url": "`+srv.URL+`", "maxConcurrent": 3}}, "pool": {"waitTimeout": "2m"}}`), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Options{Config: cfg, ReapInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(t.Context()) })
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			_, err := b.CallTool(t.Context(), req("web", ""), "hold", json.RawMessage(`{}`), nil)
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("call: %v", err)
	}
	if p := peak.Load(); p != limit {
		t.Errorf("the child saw at most %d tool calls at once, want %d (maxConcurrent)", p, limit)
	}
}
