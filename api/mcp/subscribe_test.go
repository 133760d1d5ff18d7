//lint:file-ignore SA1019 logging is how server-everything says what subscriptions it was sent, and how mcpx tells a handshake-era client its subscription ended; the 2026-07-28 revision deprecates it with a twelve-month window.

package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// Two resources of server-everything. It accepts a subscription to any
// URI; toggle-subscriber-updates starts its updates, every 5 s, of every
// URI its connection (mcpx's, one per instance) subscribed to.
const (
	uriU = "demo://resource/static/document/architecture.md"
	uriV = "demo://resource/static/document/features.md"
)

// TestSubscriptionsAreSharedAndIsolated: server-everything, one instance
// per caller session. On session s1, two REST callers and an MCP session
// subscribed to U share one child subscription (the child is asked once);
// each gets U's updates and no other URI's. An MCP session of s1 that did
// not subscribe, and a REST caller subscribed to U on s2's instance, get
// none. An MCP session that unsubscribes U stops getting U (while the
// REST callers still do), and the child's subscriptions are dropped as
// the callers leave: REST streams closed, the MCP session ended.
func TestSubscriptionsAreSharedAndIsolated(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.AddEverything(t, nil, map[string]any{"scope": "session"})})

	// M2 uses s1's instance first, so that the child's log lines (it logs
	// each subscribe and unsubscribe it is sent) reach it.
	m1u, m2u := apitest.NewUpdates(), apitest.NewUpdates()
	_, m2 := d.ConnectMCPAs(t, apitest.Bearer{Token: apitest.Token, Session: "s1"}, "/mcp/everything", "2025-11-25", m2u.Options())
	if got := apitest.CallText(t, m2, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); got != "Echo: hi" {
		t.Fatalf("echo = %q", got)
	}
	a := d.SubscribeREST(t, "everything", uriU, "s1")
	b := d.SubscribeREST(t, "everything", uriU, "s1")
	_, m1 := d.ConnectMCPAs(t, apitest.Bearer{Token: apitest.Token, Session: "s1"}, "/mcp/everything", "2025-11-25", m1u.Options())
	for _, uri := range []string{uriU, uriV} {
		if err := m1.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s over MCP: %v", uri, err)
		}
	}
	c := d.SubscribeREST(t, "everything", uriU, "s2")
	if n := d.Broker.ChildSubscriptions(); n != 3 {
		t.Fatalf("child subscriptions = %d, want 3 (U and V on s1, U on s2)", n)
	}

	// The child's updates of s1's instance start.
	r := d.Unix.Do(t, "POST", "/v1/servers/everything/tools/toggle-subscriber-updates", `{}`, wire.HeaderSession, "s1", wire.HeaderCwd, t.TempDir())
	if !strings.Contains(r.Result(t).Text(), "Started") {
		t.Fatalf("toggle = %+v", r.Result(t))
	}
	for _, s := range []*apitest.RESTSub{a, b} {
		for range 2 {
			if ev := s.Next(t); ev.Name != wire.StreamUpdated || !strings.Contains(ev.Data, uriU) {
				t.Fatalf("event %+v, want updated of %s only", ev, uriU)
			}
		}
	}
	seen := map[string]int{}
	for seen[uriU] < 2 || seen[uriV] < 2 {
		seen[m1u.Next(t)]++
	}

	// M1 leaves U: the child still sends U (A and B hold it) but not to M1.
	if err := m1.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: uriU}); err != nil {
		t.Fatal(err)
	}
	for m1u.Next(t) != uriV { // an update of U may have been on its way
	}
	before, _ := m1u.Count(uriU, "")
	for m1u.Next(t) != uriV {
	}
	if after, _ := m1u.Count(uriU, ""); after != before {
		t.Errorf("M1 got %d updates of U after it unsubscribed", after-before)
	}
	if ev := a.Next(t); ev.Name != wire.StreamUpdated {
		t.Errorf("A after M1 left: %+v, want updates still", ev)
	}

	// Isolation: neither s2's subscriber nor s1's session that did not
	// subscribe got anything.
	select {
	case ev := <-c.Events:
		t.Errorf("the subscriber on s2's instance got %+v", ev)
	default:
	}
	if n, _ := m2u.Count(uriU, ""); n > 0 {
		t.Errorf("the session that did not subscribe got %d updates", n)
	}
	if n, _ := m2u.Count(uriV, ""); n > 0 {
		t.Errorf("the session that did not subscribe got %d updates", n)
	}
	// s1's child was asked to subscribe to U once, for three subscribers.
	if _, n := m2u.Count("", "Received Subscribe Resource request for URI: "+uriU); n != 1 {
		t.Errorf("s1's child got %d subscribe requests for U, want 1", n)
	}

	// Leaving: the last subscriber of U on s1 unsubscribes the child.
	a.Close()
	if n := d.Broker.ChildSubscriptions(); n != 3 {
		t.Errorf("after A left: %d child subscriptions, want 3", n)
	}
	b.Close()
	testenv.WaitFor(t, "two child subscriptions", func() bool { return d.Broker.ChildSubscriptions() == 2 })
	testenv.WaitFor(t, "the child's unsubscribe of U", func() bool {
		_, n := m2u.Count("", "Received Unsubscribe Resource request: "+uriU)
		return n == 1
	})
	m1.Close() // the session ends (DELETE): its subscription to V goes
	testenv.WaitFor(t, "one child subscription", func() bool { return d.Broker.ChildSubscriptions() == 1 })
	c.Close()
	testenv.WaitFor(t, "no child subscription", func() bool { return d.Broker.ChildSubscriptions() == 0 })
}

// TestSubscriptionEndsWithItsInstance: when the instance stops, its
// subscriptions end: a REST subscriber gets an end event saying so and
// the stream closes; an MCP session is told with a warning, and may
// subscribe again (to the instance that serves it now).
func TestSubscriptionEndsWithItsInstance(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.AddEverything(t, nil, nil)})
	u := apitest.NewUpdates()
	warned := make(chan string, 10)
	opts := u.Options()
	opts.LoggingMessageHandler = func(_ context.Context, r *mcp.LoggingMessageRequest) {
		if s, _ := r.Params.Data.(string); r.Params.Logger == "mcpx" && strings.Contains(s, "subscription") {
			warned <- s
		}
	}
	_, m := d.ConnectMCPAs(t, apitest.Bearer{Token: apitest.Token, Session: "s"}, "/mcp/everything", "2025-11-25", opts)
	if err := m.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uriU}); err != nil {
		t.Fatal(err)
	}
	s := d.SubscribeREST(t, "everything", uriU, "s")
	instances := d.Broker.Instances()
	if len(instances) != 1 || d.Broker.ChildSubscriptions() != 1 {
		t.Fatalf("instances %+v, child subscriptions %d; want one of each", instances, d.Broker.ChildSubscriptions())
	}
	if r := d.Unix.Do(t, "DELETE", "/v1/instances/"+instances[0].ID, ""); r.StatusCode != 204 {
		t.Fatalf("stop: %d %s", r.StatusCode, r.Bytes)
	}
	if ev := s.Next(t); ev.Name != wire.StreamEnd || !strings.Contains(ev.Data, "instance stopped") {
		t.Errorf("after the stop: %+v, want an end event saying the instance stopped", ev)
	}
	select {
	case <-s.Done:
	case <-time.After(10 * time.Second):
		t.Error("the stream did not close after its end event")
	}
	select {
	case w := <-warned:
		if !strings.Contains(w, uriU) || !strings.Contains(w, "subscribe again") {
			t.Errorf("warning %q", w)
		}
	case <-time.After(10 * time.Second):
		t.Error("the MCP session was not told its subscription ended")
	}
	testenv.WaitFor(t, "no child subscription", func() bool { return d.Broker.ChildSubscriptions() == 0 })
	if err := m.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uriU}); err != nil {
		t.Fatal(err)
	}
	if n := d.Broker.ChildSubscriptions(); n != 1 {
		t.Errorf("after subscribing again: %d child subscriptions, want 1", n)
	}
}

// TestStatelessClientSubscribes: a 2026-07-28 client subscribes with
// subscriptions/listen (resourceSubscriptions, SEP-2575): the child's
// updates of the URI come on the listen's stream; ending it unsubscribes.
func TestStatelessClientSubscribes(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.AddEverything(t, nil, nil)})
	u := apitest.NewUpdates()
	_, cs := d.ConnectMCP(t, "/mcp/everything", "2026-07-28", u.Options())
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uriU}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the child subscription", func() bool { return d.Broker.ChildSubscriptions() == 1 })
	if got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "toggle-subscriber-updates", Arguments: map[string]any{}}); !strings.Contains(got, "Started") {
		t.Fatalf("toggle = %q", got)
	}
	if uri := u.Next(t); uri != uriU {
		t.Errorf("update of %q, want %s", uri, uriU)
	}
	if err := cs.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: uriU}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "no child subscription", func() bool { return d.Broker.ChildSubscriptions() == 0 })
}

// TestAggregateSubscribes: on /mcp a subscription goes to the server that
// lists the URI; a URI no server lists is refused as not found.
func TestAggregateSubscribes(t *testing.T) {
	proctest.CheckNoLeaks(t)
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`})
	apitest.AddEverything(t, cfg, nil)
	d := apitest.Start(t, apitest.Options{Config: cfg})
	u := apitest.NewUpdates()
	_, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", u.Options())
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "demo://nowhere"}); err == nil || !strings.Contains(err.Error(), "no server lists") {
		t.Errorf("subscribing to a URI nobody lists: %v", err)
	}
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uriU}); err != nil {
		t.Fatal(err)
	}
	if n := d.Broker.ChildSubscriptions(); n != 1 {
		t.Fatalf("child subscriptions = %d, want 1", n)
	}
	apitest.CallText(t, cs, &mcp.CallToolParams{Name: "everything__toggle-subscriber-updates", Arguments: map[string]any{}})
	if uri := u.Next(t); uri != uriU {
		t.Errorf("update of %q, want %s", uri, uriU)
	}
}
