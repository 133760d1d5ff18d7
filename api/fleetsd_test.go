package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/client/fleet"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

// samePort listens on 127.0.0.2 and 127.0.0.3 at one port, as the
// brokers of a fleet all serve :80 on their own tailnet address. It
// returns the listeners and the port.
func samePort(t *testing.T) (a, b net.Listener, port int) {
	t.Helper()
	for range 20 {
		a, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Fatal(err)
		}
		port := a.Addr().(*net.TCPAddr).Port
		b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.3", strconv.Itoa(port)))
		if err == nil {
			return a, b, port
		}
		a.Close() // taken on 127.0.0.3: try another port
	}
	t.Fatal("no port free on both 127.0.0.2 and 127.0.0.3 in 20 tries")
	return nil, nil, 0
}

// sdFleet serves two brokers whose addresses stand for tailnet ones:
// alpha (127.0.0.2), on a "tailnet" whose peers are beta (127.0.0.3) and
// gone (127.0.0.4, nothing listening), all tagged tag:mcpx and serving
// at one port; beta off the tailnet, its loopback address that port. It
// returns their URLs and the port.
func sdFleet(t *testing.T) (alpha, beta string, port int) {
	t.Helper()
	la, lb, port := samePort(t)
	tn := &api.Tailnet{
		Status: func(context.Context) wire.TailnetStatus { return wire.TailnetStatus{State: wire.TailnetRunning} },
		Peers: func(context.Context) ([]fleet.Peer, error) {
			return []fleet.Peer{
				{Name: "beta", DNSName: "127.0.0.3", Tags: []string{"tag:mcpx"}, Online: true},
				{Name: "gone", DNSName: "127.0.0.4", Tags: []string{"tag:mcpx"}},
				{Name: "laptop", DNSName: "127.0.0.5"}, // not a broker: untagged
			}, nil
		},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr) // fleet dials :80, the tailnet's port
			var d net.Dialer
			return d.DialContext(ctx, network, net.JoinHostPort(host, strconv.Itoa(port)))
		},
		Port: port,
	}
	alpha = serveTailnetAPIOn(t, la, "alpha-tools", api.Options{Tailnet: tn, Node: &wire.NodeInfo{Name: "alpha", DNSName: "127.0.0.2"}})
	beta = serveTailnetAPIOn(t, lb, "beta-tools", api.Options{Daemon: &api.Daemon{Info: wire.DaemonInfo{Address: lb.Addr().String()}}})
	return alpha, beta, port
}

// TestFleetSD: GET /v1/fleet/sd is Prometheus HTTP service discovery:
// a JSON array of target groups, the daemon first, then each broker of
// its fleet (whatever its state) at the tailnet port, labelled and
// scraped at /metrics; off a tailnet, the daemon alone at its loopback
// address. A caller with the metrics right reads it and /metrics, and
// nothing an admin may; a plain caller is refused both.
func TestFleetSD(t *testing.T) {
	alpha, beta, port := sdFleet(t)
	p := strconv.Itoa(port)
	at := func(host string) []string { return []string{host + ":" + p} }
	labels := func(name, dns, version, state, self string) map[string]string {
		return map[string]string{"broker": name, "__metrics_path__": "/metrics", "__meta_mcpx_broker_name": name,
			"__meta_mcpx_broker_dns_name": dns, "__meta_mcpx_broker_version": version,
			"__meta_mcpx_broker_state": state, "__meta_mcpx_broker_self": self}
	}
	sd := func(base, who string) wire.FleetTargets {
		t.Helper()
		r, err := http.Get(base + "/v1/fleet/sd?who=" + who)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		body, _ := io.ReadAll(r.Body)
		var out wire.FleetTargets
		if err := json.Unmarshal(body, &out); err != nil || r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s sd: %d %s %s", base, r.StatusCode, r.Header.Get("Content-Type"), body)
		}
		return out
	}

	want := wire.FleetTargets{
		{Targets: at("127.0.0.2"), Labels: labels("alpha", "127.0.0.2", "test", wire.FleetOK, "true")},
		{Targets: at("127.0.0.3"), Labels: labels("beta", "127.0.0.3", "test", wire.FleetOK, "false")},
		{Targets: at("127.0.0.4"), Labels: labels("gone", "127.0.0.4", "", wire.FleetUnreachable, "false")},
	}
	if diff := cmp.Diff(want, sd(alpha, "metrics")); diff != "" {
		t.Errorf("alpha's sd (-want +got):\n%s", diff)
	}
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	want = wire.FleetTargets{{Targets: at("127.0.0.3"), Labels: labels(host, "", "test", wire.FleetOK, "true")}}
	if diff := cmp.Diff(want, sd(beta, "admin")); diff != "" {
		t.Errorf("beta's sd, off the tailnet (-want +got):\n%s", diff)
	}

	for _, c := range []struct {
		who, path string
		want      int
	}{
		{"metrics", "/metrics", 200},
		{"admin", "/metrics", 200},
		{"plain", "/metrics", 403},
		{"plain", "/v1/fleet/sd", 403},
		{"metrics", "/v1/fleet", 403}, // the metrics right makes no admin
		{"metrics", "/v1/tailnet", 403},
	} {
		for _, base := range []string{alpha, beta} {
			if code, body := get(t, base+c.path+"?who="+c.who); code != c.want {
				t.Errorf("%s %s as %s: %d %s, want %d", base, c.path, c.who, code, body, c.want)
			}
		}
	}
	if code, body := get(t, alpha+"/v1/fleet/sd?who=metrics&tag=mcpx"); code != 400 || !strings.Contains(string(body), `"field":"tag"`) {
		t.Errorf("a bad tag: %d %s, want 400 naming it", code, body)
	}
}

// TestFleetSDNoAddress: off a tailnet with TCP off, the list is empty
// (HTTP service discovery wants [] then, never an error).
func TestFleetSDNoAddress(t *testing.T) {
	u := serveTailnetAPI(t, "solo", nil, nil)
	if code, body := get(t, u+"/v1/fleet/sd?who=metrics"); code != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("sd without an address: %d %s, want 200 []", code, body)
	}
}

// TestMetricsToken: a token minted with the metrics right alone (no
// server: `mcpx token mint --sub prometheus --metrics`) scrapes /metrics
// and reads /v1/fleet/sd over loopback TCP, without Mcpx-Client as
// Prometheus sends, and may use no server and no admin route; a token
// without it is refused /metrics.
func TestMetricsToken(t *testing.T) {
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}), Tokens: is})
	prom := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "prometheus", Rule: rights.Rule{Metrics: true}})
	plain := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "dev", Rule: rights.Rule{Servers: []string{"demo"}}})
	scrape := func(tok, path string) (int, []byte) {
		return get(t, d.TCP.Base+path, "Authorization", "Bearer "+tok, wire.HeaderClient, "") // as Prometheus sends: no Mcpx-Client
	}
	if code, body := scrape(prom.Token, "/metrics"); code != 200 || !strings.Contains(string(body), "mcpx_build_info") {
		t.Errorf("/metrics with a metrics token: %d %.200s", code, body)
	}
	if code, body := scrape(prom.Token, "/v1/fleet/sd"); code != 200 || !strings.HasPrefix(string(body), "[") {
		t.Errorf("/v1/fleet/sd with a metrics token: %d %s", code, body)
	}
	if code, body := scrape(plain.Token, "/metrics"); code != http.StatusForbidden || !strings.Contains(string(body), "--metrics") {
		t.Errorf("/metrics with a plain token: %d %s, want 403 naming --metrics", code, body)
	}
	pc := bearerClient(d, prom.Token)
	if r := pc.Do(t, "GET", "/v1/servers", ""); r.StatusCode != 200 || strings.Contains(string(r.Bytes), `"demo"`) {
		t.Errorf("/v1/servers with a metrics token: %d %s, want no server", r.StatusCode, r.Bytes)
	}
	for _, path := range []string{"/v1/tokens", "/v1/fleet", "/v1/log"} {
		if r := pc.Do(t, "GET", path, ""); r.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s with a metrics token: %d %s, want 403", path, r.StatusCode, r.Bytes)
		}
	}
}
