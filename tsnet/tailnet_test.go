package tsnet_test

// A whole tailnet in the test process: tailscale's test control server, a
// DERP and STUN server on loopback, and real tsnet nodes. No root, no TUN
// device, no internet. tailscale.com/tstest/integration is never imported:
// it links the whole daemon and probes the internet.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tailscale.com/derp/derpserver"
	"tailscale.com/envknob"
	"tailscale.com/net/netns"
	"tailscale.com/net/stun/stuntest"
	"tailscale.com/tailcfg"
	"tailscale.com/tstest/integration/testcontrol"
	"tailscale.com/types/key"
	"tailscale.com/types/logger"
	"tailscale.com/types/nettype"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/pool/proc/sandbox"
	"mcpx.dev/mcpx/tsnet"
	"mcpx.dev/mcpx/wire"
)

func TestMain(m *testing.M) {
	sandbox.MaybeExec() // in a confined child's helper: confine, exec, never return
	demo.MaybeServe()   // in a child: serve the demo server on stdio and exit
	os.Exit(m.Run())
}

const capName = tsnet.DefaultCapability

// tailnet is a control server with its DERP and STUN servers.
type tailnet struct {
	control *testcontrol.Server
	url     string
}

func newTailnet(t *testing.T) *tailnet {
	t.Helper()
	return newTailnetDNS(t, "tail-scale.ts.net")
}

// newTailnetDNS is newTailnet with the MagicDNS domain dns ("" = none, and
// so no certificate domains).
func newTailnetDNS(t *testing.T, dns string) *tailnet {
	t.Helper()
	// Without root, netns would make each node's STUN probe stall; the
	// port mapper would probe the LAN's gateway. envknob reads at init, so
	// t.Setenv would not do.
	netns.SetEnabled(false)
	t.Cleanup(func() { netns.SetEnabled(true) })
	envknob.SetenvForTest(t, "TS_DISABLE_PORTMAPPER", "1")

	control := &testcontrol.Server{
		DERPMap:        derpAndSTUN(t),
		DNSConfig:      &tailcfg.DNSConfig{Proxied: true},
		MagicDNSDomain: dns,
		Logf:           logger.Discard,
	}
	control.HTTPTestServer = httptest.NewUnstartedServer(control)
	control.HTTPTestServer.Start()
	t.Cleanup(control.HTTPTestServer.Close)
	return &tailnet{control: control, url: control.HTTPTestServer.URL}
}

// derpAndSTUN serves DERP (over TLS) and STUN on 127.0.0.1 and returns the
// one-region map pointing at them.
func derpAndSTUN(t *testing.T) *tailcfg.DERPMap {
	d := derpserver.New(key.NewNode(), logger.Discard)
	srv := httptest.NewUnstartedServer(derpserver.Handler(d))
	srv.Config.ErrorLog = logger.StdLogger(logger.Discard)
	srv.Config.TLSNextProto = make(map[string]func(*http.Server, *tls.Conn, http.Handler))
	srv.StartTLS()
	stunAddr, stunCleanup := stuntest.ServeWithPacketListener(t, nettype.Std{})
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		d.Close()
		stunCleanup()
	})
	return &tailcfg.DERPMap{Regions: map[int]*tailcfg.DERPRegion{
		1: {RegionID: 1, RegionCode: "test", Nodes: []*tailcfg.DERPNode{{
			Name: "t1", RegionID: 1, HostName: "127.0.0.1", IPv4: "127.0.0.1", IPv6: "none",
			STUNPort: stunAddr.Port, DERPPort: srv.Listener.Addr().(*net.TCPAddr).Port,
			InsecureForTests: true, STUNTestIP: "127.0.0.1",
		}}},
	}}
}

// node brings up a node named name; it is closed at cleanup.
func (tn *tailnet) node(t *testing.T, name string, logs io.Writer) *tsnet.Node {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	n := &tsnet.Node{
		Hostname: name, Dir: filepath.Join(t.TempDir(), name), ControlURL: tn.url, Ephemeral: true,
		UpTimeout: 30 * time.Second, Logger: slog.New(slog.NewTextHandler(logs, nil)),
	}
	began := time.Now()
	if _, err := n.Up(t.Context()); err != nil {
		t.Fatalf("node %s: %v", name, err)
	}
	t.Logf("node %s up in %v", name, time.Since(began))
	t.Cleanup(func() { n.Close() })
	return n
}

// brokerNode serves the real API over a real broker (one demo server, this
// test binary as its child, scoped by cwd; more under the names in extra,
// each the same demo server with extra's scope policy) on the node's
// listener, with identity from the node's WhoIs or a token of the returned
// issuer.
func brokerNode(t *testing.T, tn *tailnet, logs io.Writer, extra ...string) (*tsnet.Node, *auth.Issuer) {
	t.Helper()
	n := tn.node(t, "broker", logs)
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]any{}
	for _, name := range append([]string{"demo"}, extra...) {
		def := map[string]any{
			"command": exe, "scope": "cwd",
			"env": map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)},
		}
		if len(extra) > 0 {
			def["scopePolicy"] = map[string]any{"allowOverride": true}
		}
		servers[name] = def
	}
	js, _ := json.Marshal(map[string]any{"servers": servers})
	cfg, err := config.Parse(js, "test.json")
	if err != nil {
		t.Fatal(err)
	}
	serveBroker(t, n, cfg, is, "")
	return n, is
}

// serveBroker serves the real API over a real broker of cfg (state in
// stateDir, "" = none) on n's listener, with identity from n's WhoIs or a
// token of is, until the test ends.
func serveBroker(t *testing.T, n *tsnet.Node, cfg *config.Config, is *auth.Issuer, stateDir string) {
	t.Helper()
	b, err := broker.New(broker.Options{Config: cfg, StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("closing broker: %v", err)
		}
	})
	ln, err := n.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	mcp := mcp.New(mcp.Options{Broker: b, Version: "test"})
	t.Cleanup(func() { // before the broker closes
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		mcp.Close(ctx)
	})
	wg.Go(func() {
		h := api.New(api.Options{Broker: b, MCP: mcp, Version: "test", Tokens: is})
		if err := api.Serve(ctx, ln, h, api.ServeOptions{Identify: n.Identify, Host: n.OwnHost, DrainTimeout: 5 * time.Second}); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// peer calls the broker from one node.
type peer struct {
	hc *http.Client
}

func newPeer(t *testing.T, n *tsnet.Node) peer {
	t.Helper()
	hc, err := n.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	return peer{hc: hc}
}

// do sends a request to the broker by its MagicDNS name and returns the
// status and body; headers come in name, value pairs, after the browser
// guard's Mcpx-Client (an empty value removes a header).
func (p peer) do(t *testing.T, method, path, body string, headers ...string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://broker.tail-scale.ts.net"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(wire.HeaderClient, "tailnet-test")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (p peer) whoami(t *testing.T) wire.Whoami {
	t.Helper()
	code, body := p.do(t, "GET", "/v1/whoami", "")
	if code != 200 {
		t.Fatalf("whoami: %d %s", code, body)
	}
	var w wire.Whoami
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// callCwd calls the demo server's cwd tool with a declared cwd and returns
// the status and, on success, the child's working directory.
func (p peer) callCwd(t *testing.T, cwd string) (int, string) {
	t.Helper()
	code, body := p.do(t, "POST", "/v1/servers/demo/tools/cwd", "{}", wire.HeaderCwd, cwd)
	if code != 200 {
		return code, string(body)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(body, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("cwd result %s: %v", body, err)
	}
	return code, res.Content[0].Text
}

func grant(rules ...string) tailcfg.PeerCapMap {
	raw := make([]tailcfg.RawMessage, len(rules))
	for i, r := range rules {
		raw[i] = tailcfg.RawMessage(r)
	}
	return tailcfg.PeerCapMap{capName: raw}
}

func canonical(t *testing.T, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLaptopCallsBroker: a laptop node calls the broker's demo server by
// MagicDNS name with a declared cwd under its granted root; whoami shows
// its identity and rights; a cwd outside the roots is refused, through a
// symlink too; a grant changed in the control server applies to the next
// request, with no restart.
func TestLaptopCallsBroker(t *testing.T) {
	proctest.CheckNoLeaks(t)
	tn := newTailnet(t)
	began := time.Now()
	brokerNode(t, tn, nil)
	laptopNode := tn.node(t, "laptop", nil)
	t.Logf("two nodes up in %v", time.Since(began))

	root := canonical(t, t.TempDir())
	work := filepath.Join(root, "work")
	outside := canonical(t, t.TempDir())
	for _, d := range []string{work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	escape := filepath.Join(root, "escape")
	if err := os.Symlink(outside, escape); err != nil {
		t.Fatal(err)
	}
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["` + root + `"]}`))

	laptop := newPeer(t, laptopNode)
	// The grant reaches the broker node with its next netmap.
	var w wire.Whoami
	testenv.WaitFor(t, "the grant to reach the broker", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code == 200
	})
	first := time.Now()
	code, got := laptop.callCwd(t, work)
	if code != 200 || got != work {
		t.Fatalf("call with cwd %s: %d %q, want 200 and the child in %s", work, code, got, work)
	}
	t.Logf("first call over the tailnet took %v", time.Since(first))

	w = laptop.whoami(t)
	if w.Caller.Via != wire.ViaTailnet || w.Caller.Owner || w.Caller.Local || w.Caller.Admin || w.Caller.Rights.ProjectConfig("") {
		t.Errorf("whoami caller = %+v, want a tailnet caller that is neither owner, local, admin nor trusted with project config", w.Caller)
	}
	if !strings.Contains(w.Caller.Name, "@") {
		t.Errorf("caller name %q is not the laptop user's login", w.Caller.Name)
	}
	if got, want := w.Caller.Rights.String(), `[{"servers":["demo"],"roots":["`+root+`"]}]`; got != want {
		t.Errorf("whoami rights = %s, want %s", got, want)
	}
	if w.Daemon != nil {
		t.Errorf("a tailnet caller sees the daemon record: %+v", w.Daemon)
	}

	for _, cwd := range []string{outside, escape, filepath.Join(root, "..")} {
		if code, body := laptop.callCwd(t, cwd); code != http.StatusForbidden {
			t.Errorf("call with cwd %s: %d %s, want 403", cwd, code, body)
		}
	}
	// Request headers claiming another identity are not read.
	code, body := laptop.do(t, "POST", "/v1/servers/demo/tools/cwd", "{}", wire.HeaderCwd, outside,
		"X-Forwarded-For", "127.0.0.1", "Tailscale-User-Login", "admin@example.com")
	if code != http.StatusForbidden {
		t.Errorf("call with identity headers: %d %s, want 403", code, body)
	}

	// Widen the grant: admin, project config, and the other directory.
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["`+root+`"]}`,
		`{"servers": ["demo"], "roots": ["`+outside+`"], "admin": true, "projectConfig": true}`))
	testenv.WaitFor(t, "the new grant to apply", func() bool { return laptop.whoami(t).Caller.Admin })
	if !laptop.whoami(t).Caller.Rights.ProjectConfig(outside) {
		t.Errorf("a grant element with projectConfig: true did not give the caller the right in its roots")
	}
	if code, got := laptop.callCwd(t, outside); code != 200 || got != outside {
		t.Errorf("call with cwd %s after the grant: %d %q, want 200 in %s", outside, code, got, outside)
	}
	// And take it away: every route is refused.
	tn.control.SetGlobalAppCaps(nil)
	testenv.WaitFor(t, "the grant to be removed", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code == http.StatusForbidden
	})
}

// TestGrantElementsCheckedWhole is the real-use reproduction: a grant of
// two elements, each narrower than their field-by-field merge. whoami
// shows the elements as granted; a call is allowed only when one element
// allows its server, its cwd and its scope together (merged, all three
// refusals below were 200: both roots and no scope limit for both
// servers); and a server no element names is, to the peer, a server that
// does not exist.
func TestGrantElementsCheckedWhole(t *testing.T) {
	proctest.CheckNoLeaks(t)
	tn := newTailnet(t)
	brokerNode(t, tn, nil, "hiddenvault", "secret")
	laptop := newPeer(t, tn.node(t, "laptop", nil))
	granted, other := canonical(t, t.TempDir()), canonical(t, t.TempDir())
	tn.control.SetGlobalAppCaps(grant(
		`{"servers": ["demo"], "roots": ["`+granted+`"], "scopes": ["cwd", "worktree"]}`,
		`{"servers": ["hiddenvault"], "roots": ["`+other+`"]}`))
	testenv.WaitFor(t, "the grant to reach the broker", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code == 200
	})
	want := `[{"servers":["demo"],"roots":["` + granted + `"],"scopes":["cwd","worktree"]},{"servers":["hiddenvault"],"roots":["` + other + `"]}]`
	if got := laptop.whoami(t).Caller.Rights.String(); got != want {
		t.Errorf("whoami rights = %s, want the elements %s", got, want)
	}
	call := func(server, cwd string, headers ...string) (int, string) {
		code, body := laptop.do(t, "POST", "/v1/servers/"+server+"/tools/cwd", "{}", append([]string{wire.HeaderCwd, cwd}, headers...)...)
		return code, string(body)
	}
	for _, tc := range []struct {
		name, server, cwd string
		headers           []string
		code              int
		detail            string
	}{
		{"demo in its root", "demo", granted, nil, 200, granted},
		{"hiddenvault in its root, any scope", "hiddenvault", other, []string{wire.HeaderScope, "global"}, 200, ""},
		{"demo from the other element's root", "demo", other, nil, 403, "outside the roots"},
		{"demo with Mcpx-Scope: global", "demo", granted, []string{wire.HeaderScope, "global"}, 403, `scope \"global\"; this caller may use scopes: cwd, worktree`},
		{"hiddenvault from the first element's root", "hiddenvault", granted, nil, 403, "outside the roots"},
	} {
		code, body := call(tc.server, tc.cwd, tc.headers...)
		if code != tc.code || !strings.Contains(body, tc.detail) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, code, body, tc.code, tc.detail)
		}
		if tc.server == "demo" && strings.Contains(body, "hiddenvault") {
			t.Errorf("%s: a refusal about demo names hiddenvault: %s", tc.name, body)
		}
	}
	secretCode, secret := call("secret", granted)
	noneCode, none := call("nosuch", granted)
	if secretCode != 404 || noneCode != 404 || strings.ReplaceAll(secret, "secret", "nosuch") != none {
		t.Errorf("a server no element names: %d %s; one that does not exist: %d %s; want the same 404", secretCode, secret, noneCode, none)
	}
}

// TestPeerWithoutGrantRefused: with a grant for the laptop alone, a third
// node is refused on every route, listings included, with a problem that
// says why; the laptop is served.
func TestPeerWithoutGrantRefused(t *testing.T) {
	proctest.CheckNoLeaks(t)
	tn := newTailnet(t)
	brokerN, _ := brokerNode(t, tn, nil)
	laptopN := tn.node(t, "laptop", nil)
	strangerN := tn.node(t, "stranger", nil)
	brokerIP, laptopIP := brokerN.Info().IPs[0], laptopN.Info().IPs[0]

	// A grant from the laptop to the broker only. The test control
	// server's own grants are global, so this one is pushed to the broker
	// node as a raw map response once every peer is known.
	root := canonical(t, t.TempDir())
	key := nodeKey(t, tn, brokerIP)
	if !tn.control.AddRawMapResponse(key, &tailcfg.MapResponse{
		PacketFilters: map[string][]tailcfg.FilterRule{"app-grants": {{
			SrcIPs: []string{laptopIP.String()},
			CapGrant: []tailcfg.CapGrant{{
				Dsts:   []netip.Prefix{netip.PrefixFrom(brokerIP, brokerIP.BitLen())},
				CapMap: grant(`{"servers": ["*"], "roots": ["` + root + `"]}`),
			}},
		}}},
	}) {
		t.Fatal("the control server did not take the map response")
	}
	laptop, stranger := newPeer(t, laptopN), newPeer(t, strangerN)
	testenv.WaitFor(t, "the grant to reach the broker", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/servers", "")
		return code == 200
	})
	_, body := laptop.do(t, "GET", "/v1/servers", "")
	if !strings.Contains(string(body), `"demo"`) {
		t.Errorf("the laptop's listing does not show demo: %s", body)
	}

	for _, r := range wire.Routes() {
		path := strings.NewReplacer("{server}", "demo", "{tool}", "echo", "{prompt}", "greet", "{id}", "x").Replace(r.Pattern)
		code, body := stranger.do(t, r.Method, path, "{}", wire.HeaderCwd, root)
		if r.Name == wire.OpHealthz { // the one route that needs no identity
			if code != 200 {
				t.Errorf("stranger %s %s: %d %s, want 200", r.Method, path, code, body)
			}
			continue
		}
		if code != http.StatusForbidden {
			t.Errorf("stranger %s %s: %d %s, want 403", r.Method, path, code, body)
			continue
		}
		var p wire.Problem
		if err := json.Unmarshal(body, &p); err != nil || !strings.Contains(p.Detail, "no tailnet grant") {
			t.Errorf("stranger %s %s: problem %s does not say there is no grant", r.Method, path, body)
		}
	}
}

// nodeKey is the node key of the node with tailnet address ip.
func nodeKey(t *testing.T, tn *tailnet, ip netip.Addr) key.NodePublic {
	t.Helper()
	for _, n := range tn.control.AllNodes() {
		for _, a := range n.Addresses {
			if a.Addr() == ip {
				return n.Key
			}
		}
	}
	t.Fatalf("no node has address %s", ip)
	return key.NodePublic{}
}

// TestUpNeedsLogin: a node without an auth key, against a control server
// that requires a login, fails Up at its deadline with the login URL.
func TestUpNeedsLogin(t *testing.T) {
	tn := newTailnet(t)
	tn.control.RequireAuth = true
	var logs testenv.SyncBuffer
	n := &tsnet.Node{Hostname: "lonely", Dir: t.TempDir(), ControlURL: tn.url, Ephemeral: true,
		UpTimeout: 3 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	_, err := n.Up(t.Context())
	if err == nil {
		n.Close()
		t.Fatal("Up succeeded without a login")
	}
	if !strings.Contains(err.Error(), "needs login") || !strings.Contains(err.Error(), tn.url) {
		t.Errorf("Up error = %v, want it to say the node needs login at a URL of %s", err, tn.url)
	}
	if !strings.Contains(logs.String(), "needs login") {
		t.Errorf("the login URL was not logged while waiting:\n%s", logs.String())
	}
	if _, err := n.Up(t.Context()); err == nil {
		t.Error("a second Up succeeded")
	}
}

// TestUpControlUnreachable: a control URL nothing answers on fails Up at
// its deadline, naming the control server.
func TestUpControlUnreachable(t *testing.T) {
	newTailnet(t) // the hermetic switches
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	n := &tsnet.Node{Hostname: "lost", Dir: t.TempDir(), ControlURL: url, Ephemeral: true, UpTimeout: 2 * time.Second}
	_, err = n.Up(t.Context())
	if err == nil {
		n.Close()
		t.Fatal("Up succeeded with no control server")
	}
	if !strings.Contains(err.Error(), "reachable") || !strings.Contains(err.Error(), url) {
		t.Errorf("Up error = %v, want it to ask whether %s is reachable", err, url)
	}
}

// TestListenTLSFallback: the test control server announces a certificate
// domain (<host>.tail-scale.ts.net) that cannot be issued offline, so
// ListenTLS finds no certificate within its bound, says so in one log line
// and returns no listener; :80 still serves.
func TestListenTLSFallback(t *testing.T) {
	tn := newTailnet(t)
	var logs testenv.SyncBuffer
	n := tn.node(t, "tls", &logs)
	n.CertTimeout = 3 * time.Second
	ln, err := n.ListenTLS(t.Context())
	if err != nil || ln != nil {
		if ln != nil {
			ln.Close()
		}
		t.Fatalf("ListenTLS = %v, %v; want no listener and no error", ln, err)
	}
	if got := strings.Count(logs.String(), "serving HTTP on :80 only"); got != 1 {
		t.Errorf("%d fallback lines, want 1:\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), "tls.tail-scale.ts.net") {
		t.Errorf("the fallback line does not name the announced domain:\n%s", logs.String())
	}
	ln, err = n.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

// TestListenTLSNoDomains: a tailnet without MagicDNS announces no
// certificate domains; ListenTLS falls back without asking for one.
func TestListenTLSNoDomains(t *testing.T) {
	bare := newTailnetDNS(t, "")
	var bareLogs testenv.SyncBuffer
	m := bare.node(t, "plain", &bareLogs)
	if ln, err := m.ListenTLS(t.Context()); err != nil || ln != nil {
		t.Fatalf("ListenTLS without domains = %v, %v; want nothing", ln, err)
	}
	if !strings.Contains(bareLogs.String(), "offers no HTTPS certificates") {
		t.Errorf("no fallback line for a tailnet without certificates:\n%s", bareLogs.String())
	}
}

// TestDialPeer: a node dials the broker by MagicDNS name (the laptop side
// with an embedded node uses this to reach a broker where no tailscaled
// runs); a name no peer has is an error once Dial's wait ends.
func TestDialPeer(t *testing.T) {
	proctest.CheckNoLeaks(t)
	tn := newTailnet(t)
	brokerNode(t, tn, nil)
	laptop := tn.node(t, "laptop", nil)
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"]}`))
	hc := &http.Client{Transport: &http.Transport{DialContext: laptop.Dial}}
	testenv.WaitFor(t, "a whoami through Dial", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://broker/v1/whoami", nil)
		req.Header.Set(wire.HeaderClient, "test") // the browser guard
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var w wire.Whoami
		return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&w) == nil && w.Caller.Via == wire.ViaTailnet
	})
	hc.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a bound: the answer is immediate
	defer cancel()
	if c, err := laptop.Dial(ctx, "tcp", "nobody:80"); err == nil || !strings.Contains(err.Error(), `no peer called "nobody"`) {
		if c != nil {
			c.Close()
		}
		t.Errorf("Dial of an unknown name: %v, want an error saying no such peer", err)
	}
}

// TestTailnetTokensScopesAndBrowserGuard: on the tailnet listener a signed
// token admits a peer that has no grant, with exactly the token's rights;
// a bad token is a 401 problem; the browser guard refuses an Origin, a
// missing Mcpx-Client and a Host that is not the node's (DNS rebinding);
// and a grant's scopes bound the scope its calls may use.
func TestTailnetTokensScopesAndBrowserGuard(t *testing.T) {
	proctest.CheckNoLeaks(t)
	tn := newTailnet(t)
	_, is := brokerNode(t, tn, nil)
	laptop := newPeer(t, tn.node(t, "laptop", nil))
	root := canonical(t, t.TempDir())
	outside := canonical(t, t.TempDir())
	tok, _, err := is.Mint(auth.Grant{Subject: "ci-bot", Rights: rights.Rights{{Servers: []string{"demo"}, Roots: []string{root}, Scopes: []string{"cwd"}}}})
	if err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + tok

	// No grant at all: WhoIs admits nobody, the token does.
	testenv.WaitFor(t, "the broker to answer the laptop", func() bool {
		code, _ := laptop.do(t, "GET", "/healthz", "")
		return code == 200
	})
	if code, body := laptop.do(t, "GET", "/v1/servers", ""); code != http.StatusForbidden {
		t.Errorf("no grant, no token: %d %s, want 403", code, body)
	}
	code, body := laptop.do(t, "GET", "/v1/whoami", "", "Authorization", bearer)
	var w wire.Whoami
	if code != 200 || json.Unmarshal(body, &w) != nil {
		t.Fatalf("whoami with the token: %d %s", code, body)
	}
	if w.Caller.Name != "ci-bot" || w.Caller.Via != wire.ViaJWT || w.Caller.Admin || w.Caller.Owner ||
		w.Caller.Rights.String() != `[{"servers":["demo"],"roots":["`+root+`"],"scopes":["cwd"]}]` {
		t.Errorf("whoami with the token: %+v", w.Caller)
	}
	if code, body := laptop.do(t, "POST", "/v1/servers/demo/tools/cwd", "{}", wire.HeaderCwd, root, "Authorization", bearer); code != 200 || !strings.Contains(string(body), root) {
		t.Errorf("call with the token in its root: %d %s", code, body)
	}
	if code, body := laptop.do(t, "POST", "/v1/servers/demo/tools/cwd", "{}", wire.HeaderCwd, outside, "Authorization", bearer); code != http.StatusForbidden {
		t.Errorf("call with the token outside its root: %d %s, want 403", code, body)
	}
	for name, auth := range map[string]string{
		"tampered":         bearer[:len(bearer)-4] + "AAAA",
		"the owner's kind": "Bearer 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"not bearer":       "Basic " + tok,
	} {
		code, body := laptop.do(t, "GET", "/v1/whoami", "", "Authorization", auth)
		var p wire.Problem
		if code != http.StatusUnauthorized || json.Unmarshal(body, &p) != nil || p.Type != wire.ProblemTypeBase+wire.KindUnauthorized {
			t.Errorf("%s token: %d %s, want a 401 problem", name, code, body)
		}
	}

	// The browser guard comes before any identity.
	for name, h := range map[string][]string{
		"Origin":         {"Origin", "http://broker.tail-scale.ts.net"},
		"no Mcpx-Client": {wire.HeaderClient, ""},
		"rebound Host":   {"Host", "evil.example"},
	} {
		code, body := laptop.do(t, "GET", "/v1/whoami", "", append(h, "Authorization", bearer)...)
		if code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", name, code, body)
		}
	}
	if code, body := laptop.do(t, "GET", "/v1/whoami", "", "Host", "broker", "Authorization", bearer); code != 200 {
		t.Errorf("Host = the node's short name: %d %s, want 200", code, body)
	}

	// Scopes in a grant: the demo server is cwd-scoped.
	work := filepath.Join(root, "w")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["` + root + `"], "scopes": ["session"]}`))
	testenv.WaitFor(t, "the session-only grant", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code == 200
	})
	if w := laptop.whoami(t); len(w.Caller.Rights) != 1 || fmt.Sprint(w.Caller.Rights[0].Scopes) != "[session]" {
		t.Errorf("whoami rights %+v, want one rule of scopes [session]", w.Caller.Rights)
	}
	if code, body := laptop.callCwd(t, work); code != http.StatusForbidden || !strings.Contains(body, `scope \"cwd\"`) {
		t.Errorf("a cwd-scoped call under a session-only grant: %d %s, want 403 naming the scope", code, body)
	}
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["`+root+`"], "scopes": ["session"]}`,
		`{"servers": ["demo"], "roots": ["`+root+`"], "scopes": ["cwd"]}`))
	testenv.WaitFor(t, "the cwd scope to be granted", func() bool {
		return len(laptop.whoami(t).Caller.Rights) == 2
	})
	if code, got := laptop.callCwd(t, work); code != 200 || got != work {
		t.Errorf("a cwd-scoped call once cwd is granted: %d %q", code, got)
	}
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "scopes": ["repos"]}`))
	testenv.WaitFor(t, "the malformed grant", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code == http.StatusForbidden
	})
	if code, body := laptop.do(t, "GET", "/v1/whoami", ""); !strings.Contains(string(body), `unknown scope \"repos\"`) {
		t.Errorf("a grant naming an unknown scope: %d %s, want a refusal naming it", code, body)
	}
	// A grant's rate limits the peer's calls (429 past it); a bad one is
	// a malformed grant naming the accepted form.
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["` + root + `"], "rate": "2/x"}`))
	testenv.WaitFor(t, "the grant with a bad rate", func() bool {
		_, body := laptop.do(t, "GET", "/v1/whoami", "")
		return strings.Contains(string(body), `invalid rate \"2/x\"`)
	})
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"], "roots": ["` + root + `"], "rate": "2/h"}`))
	testenv.WaitFor(t, "the grant with a rate", func() bool {
		code, _ := laptop.do(t, "GET", "/v1/whoami", "")
		return code == 200
	})
	for i := range 2 {
		if code, body := laptop.callCwd(t, work); code != 200 {
			t.Fatalf("call %d under a grant of 2/h: %d %s", i, code, body)
		}
	}
	if code, body := laptop.callCwd(t, work); code != http.StatusTooManyRequests || !strings.Contains(body, "2/h") {
		t.Errorf("a third call under a grant of 2/h: %d %s, want 429 naming the rate", code, body)
	}
}

// TestMetricsGrant: a tailnet grant of {"metrics": true} lets a peer (a
// Prometheus server's node) scrape /metrics and read /v1/fleet/sd, sending
// no Mcpx-Client as Prometheus does, and nothing else: no server, no admin
// route; a grant without it is refused /metrics; admin still reads it.
func TestMetricsGrant(t *testing.T) {
	proctest.CheckNoLeaks(t)
	tn := newTailnet(t)
	brokerNode(t, tn, nil)
	prom := newPeer(t, tn.node(t, "prometheus", nil))
	scrape := func() (int, []byte) { return prom.do(t, "GET", "/metrics", "", wire.HeaderClient, "") }

	tn.control.SetGlobalAppCaps(grant(`{"metrics": true}`))
	testenv.WaitFor(t, "the metrics grant", func() bool { code, _ := scrape(); return code == 200 })
	if _, body := scrape(); !strings.Contains(string(body), "mcpx_build_info") {
		t.Errorf("/metrics with the metrics grant: %.200s", body)
	}
	if code, body := prom.do(t, "GET", "/v1/fleet/sd", "", wire.HeaderClient, ""); code != 200 || !strings.HasPrefix(string(body), "[") {
		t.Errorf("/v1/fleet/sd with the metrics grant: %d %s", code, body)
	}
	if code, body := prom.do(t, "GET", "/v1/servers", ""); code != 200 || strings.Contains(string(body), `"demo"`) {
		t.Errorf("/v1/servers with the metrics grant alone: %d %s, want no server", code, body)
	}
	for _, path := range []string{"/v1/tokens", "/v1/log", "/v1/fleet"} {
		if code, body := prom.do(t, "GET", path, ""); code != http.StatusForbidden {
			t.Errorf("GET %s with the metrics grant: %d %s, want 403", path, code, body)
		}
	}

	tn.control.SetGlobalAppCaps(grant(`{"servers": ["demo"]}`))
	testenv.WaitFor(t, "a grant without metrics", func() bool { code, _ := scrape(); return code == http.StatusForbidden })
	tn.control.SetGlobalAppCaps(grant(`{"servers": [], "admin": true}`))
	testenv.WaitFor(t, "an admin grant", func() bool { code, _ := scrape(); return code == 200 })
}
