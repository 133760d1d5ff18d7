//lint:file-ignore SA1019 logging is how server-everything says what subscriptions it was sent, and how mcpx tells a handshake-era client its subscription ended; the 2026-07-28 revision deprecates it with a twelve-month window.

package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// A resource of server-everything, which accepts a subscription to any
// URI. The subscriptions of MCP sessions are tested in api/mcp.
const uriU = "demo://resource/static/document/architecture.md"

// TestSubscribeErrors: a subscription names its uri; a server the caller
// may not see is 404 as for every route.
func TestSubscribeErrors(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	if p := d.Unix.Do(t, "GET", "/v1/servers/demo/resources/subscribe", "").Problem(t); p.Status != 400 || p.Field != "uri" {
		t.Errorf("no uri: %+v", p)
	}
	if p := d.Unix.Do(t, "GET", "/v1/servers/nope/resources/subscribe?uri=x", "").Problem(t); p.Status != 404 {
		t.Errorf("unknown server: %+v", p)
	}
	// The demo server (a 2026-07-28 child here) offers no subscriptions:
	// its subscriptions/listen agrees to none, which is said plainly.
	p := d.Unix.Do(t, "GET", "/v1/servers/demo/resources/subscribe?uri=demo://readme", "").Problem(t)
	if p.Status != 400 || p.Field != "uri" || !strings.Contains(p.Detail, "does not offer updates of demo://readme") {
		t.Errorf("a server without subscriptions: %+v", p)
	}
	if n := d.Broker.ChildSubscriptions(); n != 0 {
		t.Errorf("child subscriptions = %d after a refusal", n)
	}
}

// TestSubscriptionKeepsItsInstance: an instance with a subscriber is not
// reaped idle. Two instances of server-everything idle out after 3 s; the
// one whose resource a REST caller follows outlives the other's reaping.
func TestSubscriptionKeepsItsInstance(t *testing.T) {
	proctest.CheckNoLeaks(t)
	cfg := &config.Config{Servers: map[string]*config.Server{}}
	apitest.AddEverything(t, cfg, map[string]any{"scope": "session", "idleTimeout": "3s"})
	cfg.Pool.ReapInterval = config.Duration(time.Second)
	d := apitest.Start(t, apitest.Options{Config: cfg})
	s := d.SubscribeREST(t, "everything", uriU, "kept")
	d.Unix.Do(t, "POST", "/v1/servers/everything/tools/echo", `{"message":"x"}`, wire.HeaderSession, "idle", wire.HeaderCwd, t.TempDir()).Result(t)
	sessions := func() map[string]bool {
		out := map[string]bool{}
		for _, in := range d.Broker.Instances() {
			out[in.Key] = true
		}
		return out
	}
	if n := len(sessions()); n != 2 {
		t.Fatalf("%d instances, want 2", n)
	}
	testenv.WaitFor(t, "an instance reaped", func() bool { return len(sessions()) != 2 })
	if n := len(sessions()); n != 1 {
		t.Fatalf("%d instances after the reaping, want the idle one reaped alone", n)
	}
	for k := range sessions() {
		if !strings.Contains(k, "kept") {
			t.Errorf("the instance left is %s, want the subscribed one", k)
		}
	}
	if n := d.Broker.ChildSubscriptions(); n != 1 {
		t.Errorf("child subscriptions = %d, want 1", n)
	}
	select {
	case ev := <-s.Events:
		t.Errorf("the subscriber got %+v", ev)
	default:
	}
}

// TestConcurrentSubscribersLeaveNoSubscription: callers subscribing to one
// URI and leaving at once, over and over, leave no child subscription
// behind, and the child is sent as many unsubscribes as subscribes (it
// says so in its log, which a session using the instance receives).
func TestConcurrentSubscribersLeaveNoSubscription(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.AddEverything(t, nil, nil)})
	u := apitest.NewUpdates()
	_, watcher := d.ConnectMCPAs(t, apitest.Bearer{Token: apitest.Token, Session: "w"}, "/mcp/everything", "2025-11-25", u.Options())
	apitest.CallText(t, watcher, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}})
	for round := range 3 {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "GET", d.Unix.Base+"/v1/servers/everything/resources/subscribe?uri="+uriU, nil)
				resp, err := d.Unix.HTTP.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				var buf [64]byte
				resp.Body.Read(buf[:]) // the subscribed event, or some of it: then leave
			})
		}
		wg.Wait()
		testenv.WaitFor(t, "no child subscription", func() bool { return d.Broker.ChildSubscriptions() == 0 })
		testenv.WaitFor(t, "as many unsubscribes as subscribes", func() bool {
			_, subs := u.Count("", "Received Subscribe Resource request for URI: "+uriU)
			_, unsubs := u.Count("", "Received Unsubscribe Resource request: "+uriU)
			return subs == unsubs && subs > round
		})
	}
}

// TestStatelessChildSubscribes: a 2026-07-28 child (the demo server in
// the stateless era, with EnvApps' subscribable resources) is subscribed
// the way that revision has instead of resources/subscribe — a held
// subscriptions/listen naming the resource — shared by two callers, and
// its updates reach them; when the last leaves, the listen ends.
func TestStatelessChildSubscribes(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global", "env": {"` + demo.EnvApps + `": "1", "` + demo.EnvEra + `": "stateless"}}`})
	a := d.SubscribeREST(t, "demo", "demo://readme", "a")
	b := d.SubscribeREST(t, "demo", "demo://readme", "b")
	if n := d.Broker.ChildSubscriptions(); n != 1 {
		t.Fatalf("child subscriptions = %d, want 1 shared", n)
	}
	r := d.Unix.Do(t, "POST", "/v1/servers/demo/tools/touch", `{"uri":"demo://readme"}`)
	if r.StatusCode != 200 {
		t.Fatalf("touch: %d %s", r.StatusCode, r.Bytes)
	}
	for _, s := range []*apitest.RESTSub{a, b} {
		if ev := s.Next(t); ev.Name != wire.StreamUpdated || !strings.Contains(ev.Data, "demo://readme") {
			t.Errorf("event %+v, want updated of demo://readme", ev)
		}
	}
	a.Close()
	b.Close()
	testenv.WaitFor(t, "no child subscription after both left", func() bool { return d.Broker.ChildSubscriptions() == 0 })
	// The child's listen ended: another touch reaches no one, and a new
	// subscription is a new listen that works.
	c := d.SubscribeREST(t, "demo", "demo://readme", "c")
	defer c.Close()
	d.Unix.Do(t, "POST", "/v1/servers/demo/tools/touch", `{"uri":"demo://readme"}`)
	if ev := c.Next(t); ev.Name != wire.StreamUpdated {
		t.Errorf("event %+v after subscribing again, want updated", ev)
	}
}
