package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
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

// serveBroker serves the real API of a broker configured with servers on a
// loopback listener whose callers are named by id (as the tailnet
// listener's are), and returns its address.
func serveBroker(t *testing.T, servers []string, id api.Identify) string {
	t.Helper()
	var entries []string
	for _, s := range servers {
		entries = append(entries, fmt.Sprintf("%q: {\"command\": \"true\"}", s))
	}
	cfg, err := config.Parse([]byte(`{"servers": {`+strings.Join(entries, ",")+`}}`), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		h := api.New(api.Options{Broker: b, Version: "v-test"})
		if err := api.Serve(ctx, ln, h, api.ServeOptions{Identify: id, DrainTimeout: time.Second}); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		b.Close(context.Background())
	})
	return ln.Addr().String()
}

// silent accepts connections and never answers: a peer that hangs.
func silent(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// notBroker serves some other web app: a 404 for everything.
func notBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends at Close
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// closedPort is an address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func granted(servers ...string) api.Identify {
	return func(*http.Request) (broker.Caller, error) {
		return broker.Caller{Name: "laptop@example.com", Via: wire.ViaTailnet, Rights: rights.Rights{{Servers: servers}}}, nil
	}
}

// TestDiscover: the tagged peers are asked in parallel; each shows what its
// grant lets the asker see (alpha: both servers; beta: one of two), a peer
// that refuses the asker is refused with its reason, a peer that hangs or
// has nothing listening is unreachable, a peer that is some other web app
// is an error; untagged peers are not asked. With Probe, only the peers
// that answer as brokers are listed, tagged or not.
func TestDiscover(t *testing.T) {
	addrs := map[string]string{
		"alpha":   serveBroker(t, []string{"demo", "git"}, granted()),
		"beta":    serveBroker(t, []string{"demo", "secret"}, granted("demo")),
		"gamma":   serveBroker(t, []string{"demo"}, func(*http.Request) (broker.Caller, error) { return broker.Caller{}, errors.New("no grant") }),
		"hang":    silent(t),
		"gone":    closedPort(t),
		"web":     notBroker(t),
		"untag":   serveBroker(t, []string{"other"}, granted()),
		"offline": closedPort(t),
	}
	var mu sync.Mutex
	var dialled []string
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		name := strings.TrimSuffix(host, ".tail.ts.net")
		mu.Lock()
		dialled = append(dialled, name)
		mu.Unlock()
		real, ok := addrs[name]
		if !ok {
			return nil, fmt.Errorf("no peer %s", host)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, real)
	}
	var peers []fleet.Peer
	for name := range addrs {
		p := fleet.Peer{Name: name, DNSName: name + ".tail.ts.net", IPs: []string{"100.64.0.1"}, Online: name != "offline"}
		if name != "untag" {
			p.Tags = []string{"tag:mcpx"}
		}
		peers = append(peers, p)
	}
	timeout := 300 * time.Millisecond
	f := fleet.Discover(t.Context(), peers, fleet.Options{Dial: dial, Timeout: timeout})

	if f.Tag != wire.DefaultFleetTag || f.Probe {
		t.Errorf("tag %q probe %v, want %s by default", f.Tag, f.Probe, wire.DefaultFleetTag)
	}
	got := map[string]wire.FleetBroker{}
	var names []string
	for _, b := range f.Brokers {
		got[b.Name] = b
		names = append(names, b.Name)
	}
	if want := []string{"alpha", "beta", "gamma", "gone", "hang", "offline", "web"}; !slices.Equal(names, want) {
		t.Fatalf("brokers %v, want %v (sorted, the untagged peer left out)", names, want)
	}
	mu.Lock()
	if slices.Contains(dialled, "untag") {
		t.Error("an untagged peer was asked")
	}
	mu.Unlock()
	servers := func(b wire.FleetBroker) []string {
		var s []string
		for _, srv := range b.Servers {
			s = append(s, srv.Name)
		}
		return s
	}
	if a := got["alpha"]; a.State != wire.FleetOK || a.Version != "v-test" || a.Caller != "laptop@example.com" ||
		!slices.Equal(servers(a), []string{"demo", "git"}) || a.DNSName != "alpha.tail.ts.net" {
		t.Errorf("alpha = %+v, want ok with demo and git", a)
	}
	if b := got["beta"]; b.State != wire.FleetOK || !slices.Equal(servers(b), []string{"demo"}) {
		t.Errorf("beta = %+v, want ok with demo only (its grant)", b)
	}
	if g := got["gamma"]; g.State != wire.FleetRefused || g.Version != "v-test" || g.Servers != nil || g.Error == "" {
		t.Errorf("gamma = %+v, want refused with a reason and no servers", g)
	}
	for _, name := range []string{"hang", "gone", "offline"} {
		if b := got[name]; b.State != wire.FleetUnreachable || b.Error == "" || strings.Contains(b.Error, "127.0.0.1") {
			t.Errorf("%s = %+v, want unreachable, with a reason naming no internal address", name, b)
		}
	}
	if h := got["hang"]; h.Error != "no answer within "+timeout.String() {
		t.Errorf("hang: %q, want the probe's bound named", h.Error)
	}
	if w := got["web"]; w.State != wire.FleetError {
		t.Errorf("web = %+v, want error: not a broker", w)
	}
	if o := got["offline"]; o.Online {
		t.Errorf("offline = %+v, want online false as the peer list said", o)
	}

	// Probe: every peer asked, the brokers kept, whatever their tags.
	p := fleet.Discover(t.Context(), peers, fleet.Options{Dial: dial, Timeout: timeout, Probe: true})
	names = nil
	for _, b := range p.Brokers {
		names = append(names, b.Name)
	}
	if want := []string{"alpha", "beta", "gamma", "untag"}; !slices.Equal(names, want) || p.Tag != "" || !p.Probe {
		t.Errorf("probe: %v (tag %q), want %v", names, p.Tag, want)
	}

	// Another tag selects other peers.
	if o := fleet.Discover(t.Context(), peers, fleet.Options{Dial: dial, Timeout: timeout, Tag: "tag:other"}); len(o.Brokers) != 0 || o.Tag != "tag:other" {
		t.Errorf("tag:other: %+v, want none", o)
	}
}

// TestDiscoverBounded: many hanging peers, asked two at a time, cost no
// more than the total bound; those not asked in time say so.
func TestDiscoverBounded(t *testing.T) {
	hang := silent(t)
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, hang)
	}
	var peers []fleet.Peer
	for i := range 8 {
		peers = append(peers, fleet.Peer{Name: fmt.Sprintf("p%d", i), Tags: []string{"tag:mcpx"}})
	}
	f := fleet.Discover(t.Context(), peers, fleet.Options{Dial: dial, Timeout: 200 * time.Millisecond, Total: 300 * time.Millisecond, Parallel: 2})
	var asked, notAsked int
	for _, b := range f.Brokers {
		if b.State != wire.FleetUnreachable {
			t.Errorf("%s = %+v, want unreachable", b.Name, b)
		}
		if strings.HasPrefix(b.Error, "not asked") {
			notAsked++
		} else {
			asked++
		}
	}
	if len(f.Brokers) != 8 || notAsked == 0 || asked == 0 {
		t.Errorf("%d brokers, %d asked, %d not asked: want 8, some asked before the total bound and the rest not", len(f.Brokers), asked, notAsked)
	}
}

func TestCheckTag(t *testing.T) {
	for _, ok := range []string{"tag:mcpx", "tag:prod-broker"} {
		if err := fleet.CheckTag(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "mcpx", "tag:", "tag:a,b"} {
		if err := fleet.CheckTag(bad); err == nil || !strings.Contains(err.Error(), "tag:<name>") {
			t.Errorf("%q: %v, want an error showing the form", bad, err)
		}
	}
}
