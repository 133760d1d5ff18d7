package api_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/client/fleet"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/wire"
)

// serveTailnetAPI serves the API of a broker of one server (name) with tn
// and node, its callers named by the ?who= of each request: "admin", a
// plain grant, or refused. It returns the URL.
func serveTailnetAPI(t *testing.T, name string, tn *api.Tailnet, node *wire.NodeInfo) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveTailnetAPIOn(t, ln, name, api.Options{Tailnet: tn, Node: node})
}

// serveTailnetAPIOn is serveTailnetAPI on ln, with opts (Broker and
// Version are set here); ?who=metrics is a caller with the metrics right
// alone.
func serveTailnetAPIOn(t *testing.T, ln net.Listener, name string, opts api.Options) string {
	t.Helper()
	cfg, err := config.Parse([]byte(`{"servers": {"`+name+`": {"command": "true"}}}`), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	id := func(r *http.Request) (broker.Caller, error) {
		switch r.URL.Query().Get("who") {
		case "admin":
			return broker.Caller{Name: "ops@example.com", Via: wire.ViaTailnet, Rights: rights.Rights{{Admin: true}}}, nil
		case "metrics":
			return broker.Caller{Name: "tag:prometheus", Via: wire.ViaTailnet, Rights: rights.Rights{rights.Rule{Metrics: true}.Granted()}}, nil
		case "plain":
			return broker.Caller{Name: "dev@example.com", Via: wire.ViaTailnet, Rights: rights.Rights{{}}}, nil
		}
		return broker.Caller{Name: "tag:mcpx", Via: wire.ViaTailnet, Rights: rights.Rights{{}}}, nil // another broker asking
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		opts.Broker, opts.Version = b, "test"
		if err := api.Serve(ctx, ln, api.New(opts), api.ServeOptions{Identify: id, DrainTimeout: time.Second}); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		b.Close(context.Background())
	})
	return "http://" + ln.Addr().String()
}

// TestFleetRoute: GET /v1/fleet lists the daemon itself first, then the
// brokers its node finds (asked through the node's dialer); a caller
// that is not an admin is refused; a bad tag or probe is a 400 naming the
// parameter; a daemon off the tailnet answers 503 with the fix, and GET
// /v1/tailnet says "off" there and the node's state on a tailnet.
func TestFleetRoute(t *testing.T) {
	beta := serveTailnetAPI(t, "beta-tools", nil, nil)
	betaAddr := strings.TrimPrefix(beta, "http://")
	tn := &api.Tailnet{
		Status: func(context.Context) wire.TailnetStatus {
			return wire.TailnetStatus{State: wire.TailnetNeedsLogin, AuthURL: "https://login.example/a/1"}
		},
		Peers: func(context.Context) ([]fleet.Peer, error) {
			return []fleet.Peer{{Name: "beta", DNSName: "beta.tail.ts.net", Tags: []string{"tag:mcpx"}, Online: true}}, nil
		},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !strings.HasPrefix(addr, "beta.tail.ts.net:") {
				t.Errorf("dialled %s, want beta's MagicDNS name", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, betaAddr)
		},
	}
	node := &wire.NodeInfo{Name: "alpha", DNSName: "alpha.tail.ts.net", IPs: []string{"100.64.0.1"}}
	alpha := serveTailnetAPI(t, "alpha-tools", tn, node)

	code, body := get(t, alpha+"/v1/fleet?who=admin")
	var f wire.Fleet
	if code != 200 || json.Unmarshal(body, &f) != nil {
		t.Fatalf("fleet: %d %s", code, body)
	}
	if f.Node != "alpha.tail.ts.net" || f.Tag != wire.DefaultFleetTag || len(f.Brokers) != 2 {
		t.Fatalf("fleet = %s, want alpha's view: itself and beta", body)
	}
	self, b := f.Brokers[0], f.Brokers[1]
	if !self.Self || self.Name != "alpha" || self.State != wire.FleetOK || len(self.Servers) != 1 || self.Servers[0].Name != "alpha-tools" {
		t.Errorf("self = %+v, want alpha with alpha-tools", self)
	}
	if b.Self || b.Name != "beta" || b.State != wire.FleetOK || len(b.Servers) != 1 || b.Servers[0].Name != "beta-tools" || b.Caller != "tag:mcpx" {
		t.Errorf("beta = %+v, want beta-tools, asked as alpha's node", b)
	}

	if code, body := get(t, alpha+"/v1/fleet?who=plain"); code != http.StatusForbidden || !strings.Contains(string(body), "admin") {
		t.Errorf("a plain caller: %d %s, want 403 saying admin", code, body)
	}
	for q, field := range map[string]string{"&tag=mcpx": "tag", "&probe=maybe": "probe", "&timeout=forever": "timeout",
		"&timeout=10ms": "timeout", "&timeout=1m": "timeout"} {
		code, body := get(t, alpha+"/v1/fleet?who=admin"+q)
		if code != http.StatusBadRequest || !strings.Contains(string(body), `"field":"`+field+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", q, code, body, field)
		}
	}
	code, body = get(t, beta+"/v1/fleet?who=admin")
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "--tailnet") {
		t.Errorf("off the tailnet: %d %s, want 503 with the fix", code, body)
	}

	var st wire.TailnetStatus
	if code, body := get(t, beta+"/v1/tailnet?who=admin"); code != 200 || json.Unmarshal(body, &st) != nil || st.State != wire.TailnetOff {
		t.Errorf("tailnet off: %d %s", code, body)
	}
	if code, body := get(t, alpha+"/v1/tailnet?who=admin"); code != 200 || json.Unmarshal(body, &st) != nil ||
		st.State != wire.TailnetNeedsLogin || st.AuthURL != "https://login.example/a/1" {
		t.Errorf("tailnet: %d %s, want the node's state", code, body)
	}
	if code, _ := get(t, alpha+"/v1/tailnet?who=plain"); code != http.StatusForbidden {
		t.Errorf("tailnet for a plain caller: %d, want 403", code)
	}
}

// TestFleetTimeout: ?timeout= bounds the question to each broker: a peer
// that never answers is shown unreachable after that bound, not the
// daemon's default.
func TestFleetTimeout(t *testing.T) {
	tn := &api.Tailnet{
		Status: func(context.Context) wire.TailnetStatus { return wire.TailnetStatus{State: wire.TailnetRunning} },
		Peers: func(context.Context) ([]fleet.Peer, error) {
			return []fleet.Peer{{Name: "mute", DNSName: "mute.tail.ts.net", Tags: []string{"tag:mcpx"}, Online: true}}, nil
		},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			<-ctx.Done() // a peer that never answers
			return nil, ctx.Err()
		},
		Timeout: time.Minute, // the daemon's own bound: far longer than the test's
	}
	alpha := serveTailnetAPI(t, "alpha-tools", tn, &wire.NodeInfo{Name: "alpha", DNSName: "alpha.tail.ts.net"})
	code, body := get(t, alpha+"/v1/fleet?who=admin&timeout=300ms")
	var f wire.Fleet
	if code != 200 || json.Unmarshal(body, &f) != nil || len(f.Brokers) != 2 {
		t.Fatalf("fleet: %d %s", code, body)
	}
	if m := f.Brokers[1]; m.Name != "mute" || m.State != wire.FleetUnreachable || !strings.Contains(m.Error, "300ms") {
		t.Errorf("mute = %+v, want unreachable within 300ms", m)
	}
}
