package tsnet_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"html"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tailscale.com/net/socks5"
	"tailscale.com/types/logger"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/oauthtest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/tsnet"
)

// consentGrant is the test's grant: the demo server anywhere; the broker
// also serves "other", which it does not give.
const consentGrant = `{"servers": ["demo"], "roots": ["/"]}`

// consentLeg is one way the TS SDK's client identifies itself to the
// public face: by dynamic client registration, or (a leg the CIMD work
// adds) by a Client ID Metadata Document at clientMetadataURL, which the
// script hands the SDK's provider as clientMetadataUrl and the tokens must
// name as their client. setup may serve the document (say, on a loopback
// HTTPS host); env comes last, so its NODE_EXTRA_CA_CERTS (a file with
// both certificates) wins.
type consentLeg struct {
	name              string
	clientMetadataURL string            // "" = register by DCR
	env               []string          // more environment for the script
	setup             func(*consentRig) // before the script starts; nil = nothing
	// callback is told the client's redirect URI before it signs in
	// (a metadata document must list it); nil = nothing.
	callback func(redirect string)
}

// TestPublicConsentOnTheTailnet: the public face's authorization page
// sends a browser on a tailnet machine to the consent page on the tailnet
// listener, where WhoIs names its person; headless Chromium (through a
// SOCKS proxy dialling out of that machine's tsnet node) sees the client's
// name, the host it returns to and the servers of the person's grant, and
// gives it one server for an hour. The TS SDK's client with its OAuth
// provider (registering by DCR, then known by a Client ID Metadata
// Document on a loopback HTTPS host) then has its token, lists and calls tools (that server's
// only), refreshes, and once the person's tailnet grant no longer covers
// the token, fails cleanly: the token and its sign-in are revoked and the
// client is sent to sign in again. Before, the probes of the consent page
// (consentRig.probes), each refused with nothing leaked.
func TestPublicConsentOnTheTailnet(t *testing.T) {
	chromium := testenv.Chromium(t)
	node := testenv.Node(t)
	pw := filepath.Dir(testenv.NPMPackageBin(t, "playwright-core"))
	sdk := filepath.Join(testenv.RepoRoot(t), "testdata", "npm", "node_modules", "@modelcontextprotocol", "sdk")
	proctest.CheckNoLeaks(t)
	rig := startConsentRig(t)
	t.Run("probes", rig.probes)
	cimd := consentLeg{name: "cimd", clientMetadataURL: rig.meta.ClientID(), callback: rig.meta.SetRedirect}
	for _, leg := range []consentLeg{{name: "dcr"}, cimd} {
		t.Run(leg.name, func(t *testing.T) {
			rig.tn.control.SetGlobalAppCaps(grant(consentGrant))
			rig.waitGrant(t, true)
			if leg.setup != nil {
				leg.setup(rig)
			}
			env := append(os.Environ(), "PLAYWRIGHT_CORE="+pw, "CHROMIUM="+chromium, "SDK="+sdk, "MCP_URL="+rig.origin+"/mcp",
				"SOCKS="+rig.socks, "NODE_EXTRA_CA_CERTS="+rig.ca, "CLIENT_METADATA_URL="+leg.clientMetadataURL, proctest.Env(t))
			rig.signIn(t, node, append(env, leg.env...), leg)
		})
	}
}

// signIn runs the script, checks what it saw, takes the grant away and
// checks the client fails cleanly.
func (rig *consentRig) signIn(t *testing.T, node string, env []string, leg consentLeg) {
	clientID := leg.clientMetadataURL
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "consent.cjs"))
	cmd.Env = append(env[:len(env):len(env)], proctest.Env(t))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cmd.Wait(); err != nil {
			t.Errorf("the client's script: %v\n%s", err, stderr.String())
		}
	}()
	defer stdin.Close()
	lines := bufio.NewScanner(stdout)
	next := func(prefix string) string {
		t.Helper()
		for lines.Scan() {
			if rest, ok := strings.CutPrefix(lines.Text(), prefix+" "); ok {
				return rest
			}
			t.Logf("script: %s", lines.Text())
		}
		t.Fatalf("the script ended before %s\n%s", prefix, stderr.String())
		return ""
	}
	if redirect := next("CALLBACK"); leg.callback != nil {
		leg.callback(redirect)
	}
	io.WriteString(stdin, "GO\n") //nolint:errcheck // the script's answer says
	var got struct {
		URL, Client, RedirectHost, Who, Landed, Echo, Echo2, Registered string
		Offered, Tools                                                  []string
		Rotated                                                         bool
	}
	json.Unmarshal([]byte(next("SIGNED-IN")), &got) //nolint:errcheck // checked below
	rig.checkSignedIn(t, got.URL, got.Client, got.RedirectHost, got.Who, got.Landed, got.Offered)
	if strings.Join(got.Tools, ",") == "" || got.Echo != "consented" || got.Echo2 != "refreshed" || !got.Rotated {
		t.Errorf("the client after signing in: tools %v, echo %q, after refreshing %q, rotated %v", got.Tools, got.Echo, got.Echo2, got.Rotated)
	}
	for _, name := range got.Tools {
		if !strings.HasPrefix(name, "demo__") {
			t.Errorf("tool %s listed; the consent gave demo only", name)
		}
	}
	if clientID == "" {
		clientID = got.Registered // by DCR
	} else if (got.Registered != "" && got.Registered != clientID) || rig.meta.Fetches() == 0 {
		t.Errorf("the client registered as %q, its document fetched %d times: want it known by its metadata document", got.Registered, rig.meta.Fetches())
	}
	rig.checkTokens(t, clientID)

	rig.tn.control.SetGlobalAppCaps(grant(`{"servers": ["other"], "roots": ["/"]}`)) // demo is no longer the approver's
	rig.waitGrant(t, false)
	io.WriteString(stdin, "REVOKED\n") //nolint:errcheck // the script's answer says
	var after struct {
		Connected   bool
		Error       string
		Message     string
		SignInAgain bool
	}
	json.Unmarshal([]byte(next("AFTER-REVOKE")), &after) //nolint:errcheck // checked below
	if after.Connected || after.Error != "UnauthorizedError" || !after.SignInAgain {
		t.Errorf("the client once its approver's grant went: %+v, want UnauthorizedError and sent to sign in again", after)
	}
	if ls := rig.store.List(); len(ls) != 0 {
		t.Errorf("tokens left once their approver's grant went: %+v", ls)
	}
}

func (rig *consentRig) checkSignedIn(t *testing.T, pageURL, client, redirectHost, who, landed string, offered []string) {
	t.Helper()
	u, err := url.Parse(pageURL)
	if err != nil || u.Host != "broker.tail-scale.ts.net" || u.Path != public.ConsentPath {
		t.Errorf("the consent page was at %q, want the broker's tailnet name", pageURL)
	}
	// A client known by its metadata document shows as "name (host)".
	if !strings.HasPrefix(client, "Consent E2E") || !strings.HasPrefix(redirectHost, "127.0.0.1:") || who != rig.login || strings.Join(offered, ",") != "demo" {
		t.Errorf("the consent page showed client %q returning to %q to %q, offering %v; want Consent E2E, 127.0.0.1, %s, [demo]",
			client, redirectHost, who, offered, rig.login)
	}
	if landed != "Signed in" {
		t.Errorf("the browser landed at the client's callback with %q", landed)
	}
}

// checkTokens: one sign-in, of client, approved by the person at their
// machine's address, giving demo only.
func (rig *consentRig) checkTokens(t *testing.T, client string) {
	t.Helper()
	ls := rig.store.List()
	if len(ls) == 0 {
		t.Fatal("no tokens issued")
	}
	for _, tok := range ls {
		if tok.Client != client || tok.Approver != rig.login || tok.ApproverNode != rig.aliceIP.String() ||
			len(tok.Rights) != 1 || strings.Join(tok.Rights[0].Servers, ",") != "demo" {
			t.Errorf("token %+v, want %s's, approved by %s at %s, for demo", tok, client, rig.login, rig.aliceIP)
		}
	}
}

// consentRig is a tailnet with a broker serving a public face on loopback
// TLS, and alice's machine, whose node a SOCKS proxy dials out of.
type consentRig struct {
	tn            *tailnet
	broker, alice *tsnet.Node
	aliceIP       netip.Addr
	login         string
	store         *access.Store
	face          *public.Face
	origin, ca    string // the public face's origin and its certificate's file
	socks         string // the SOCKS proxy's address
	meta          *oauthtest.MetadataHost
	loopback      string // the broker's loopback TCP listener's base URL
	publicHTTP    *http.Client
	aliceHTTP     *http.Client
}

func startConsentRig(t *testing.T) *consentRig {
	t.Helper()
	rig := &consentRig{tn: newTailnet(t)}
	rig.broker, rig.alice = rig.tn.node(t, "broker", nil), rig.tn.node(t, "alice", nil)
	rig.aliceIP = rig.alice.Info().IPs[0]
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rig.store = st
	pub, conf, ca := publicListener(t)
	rig.origin, rig.ca = "https://"+pub.Addr().String(), ca
	rig.publicHTTP = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: conf}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// The CIMD leg's metadata document, on a loopback HTTPS host the
	// face may fetch from (tests only: by default it refuses loopback).
	rig.meta = oauthtest.NewMetadataHost(t, "Consent E2E")
	roots := x509.NewCertPool()
	roots.AddCert(rig.meta.Certificate())
	fetch := public.FetchTest{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, RootCAs: roots}
	if rig.face, err = public.New(public.Options{URL: rig.origin, Tokens: st, Limit: public.Limit{Rate: 1000, Burst: 1000}, FetchTest: fetch}); err != nil {
		t.Fatal(err)
	}
	rig.face.SetConsentPage("http://broker.tail-scale.ts.net" + public.ConsentPath)
	rig.serve(t, pub)
	rig.socks = serveSOCKS(t, rig.alice)
	if rig.aliceHTTP, err = rig.alice.HTTPClient(); err != nil {
		t.Fatal(err)
	}
	rig.aliceHTTP.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	rig.tn.control.SetGlobalAppCaps(grant(consentGrant))
	rig.waitGrant(t, true)
	return rig
}

// waitGrant waits until the broker's WhoIs of alice shows the grant
// (covering demo or not).
func (rig *consentRig) waitGrant(t *testing.T, demoToo bool) {
	t.Helper()
	testenv.WaitFor(t, "alice's grant to reach the broker", func() bool {
		c, err := rig.broker.WhoIs(t.Context(), rig.aliceIP.String())
		rig.login = c.Name
		return err == nil && len(c.Rights) == 1 && demoToo == slices.Contains(c.Rights[0].Servers, "demo")
	})
}

// serve runs a broker of demo and other (this test binary's demo server)
// with its API on the broker node's listener, on loopback TCP and, for
// its public face, on pub.
func (rig *consentRig) serve(t *testing.T, pub net.Listener) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]any{}
	for _, name := range []string{"demo", "other"} {
		servers[name] = map[string]any{"command": exe, "scope": "global",
			"env": map[string]string{demo.EnvServer: "1", proctest.MarkerEnv: proctest.Marker(t)}}
	}
	js, _ := json.Marshal(map[string]any{"servers": servers})
	cfg, err := config.Parse(js, "test.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	m := mcp.New(mcp.Options{Broker: b, Version: "test"})
	faces := api.NewFaces(api.Options{Broker: b, MCP: m, Version: "test", Public: rig.face,
		Tailnet: &api.Tailnet{WhoIs: rig.broker.WhoIs}})
	tln, err := rig.broker.Listen()
	if err != nil {
		t.Fatal(err)
	}
	lln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rig.loopback = "http://" + lln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	serve := func(ln net.Listener, h http.Handler, so api.ServeOptions) {
		so.DrainTimeout = 5 * time.Second
		wg.Go(func() {
			if err := api.Serve(ctx, ln, h, so); err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	serve(tln, faces.Private, api.ServeOptions{Identify: rig.broker.Identify, Host: rig.broker.OwnHost})
	serve(lln, faces.Private, api.ServeOptions{})
	serve(pub, faces.Public, api.ServeOptions{})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		m.Close(ctx)
		if err := b.Close(ctx); err != nil {
			t.Errorf("closing the broker: %v", err)
		}
	})
}

// publicListener is a TLS listener on loopback with a fresh self-signed
// certificate for 127.0.0.1, the pool that trusts it and its PEM file.
func publicListener(t *testing.T) (net.Listener, *x509.CertPool, string) {
	t.Helper()
	cert, pemBytes := oauthtest.LoopbackCert(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), pool, ca
}

// serveSOCKS serves a SOCKS5 proxy on loopback that dials out of n: a
// browser using it reaches the tailnet as n's machine.
func serveSOCKS(t *testing.T, n *tsnet.Node) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &socks5.Server{Dialer: n.Dial, Logf: logger.Discard} // Chromium's own background requests fail there
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(ln) }) //nolint:errcheck // ends when ln closes
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// probes: the consent page refused, with nothing leaked, on the public
// listener, on loopback TCP, to a POST without its CSRF token, with a
// wrong one, from another origin, replayed, choosing a server outside the
// person's grant, and to a person without a grant; a denial goes back to
// the client as access_denied.
func (rig *consentRig) probes(t *testing.T) {
	client := rig.register(t)
	link, waitID := rig.authorize(t, client)
	cid := link.Query().Get("id")
	secrets := []string{waitID, client}
	if code, body := rig.get(t, rig.publicHTTP, rig.origin+public.ConsentPath+"?id="+url.QueryEscape(cid)); code != http.StatusNotFound || strings.Contains(body, cid) {
		t.Errorf("the consent page on the public listener: %d %s, want 404 naming nothing", code, body)
	}
	if code, body := rig.get(t, http.DefaultClient, rig.loopback+public.ConsentPath+"?id="+url.QueryEscape(cid)); code != http.StatusForbidden || !strings.Contains(body, "tailnet only") {
		t.Errorf("the consent page on loopback TCP: %d %s, want 403", code, body)
	}
	form, csrf := rig.consentForm(t, link)
	const origin = "http://broker.tail-scale.ts.net"
	probe := func(name string, v url.Values, want string, headers ...string) {
		t.Helper()
		code, body := rig.post(t, v, headers...)
		if code != http.StatusForbidden || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s, want 403 saying %q", name, code, body, want)
		}
		for _, s := range append(secrets, csrf) {
			if strings.Contains(body, s) {
				t.Errorf("%s: the answer echoes a secret:\n%s", name, body)
			}
		}
	}
	with := func(k, v string) url.Values {
		out := url.Values{"id": {cid}, "csrf": {csrf}, "server": {"demo"}, "decision": {"approve"}}
		out.Set(k, v)
		return out
	}
	probe("no CSRF token", with("csrf", ""), "stale", "Origin", origin)
	probe("a wrong CSRF token", with("csrf", csrf[:len(csrf)-3]+"abc"), "stale", "Origin", origin)
	probe("no Origin", form, "Origin")
	probe("another origin", form, "Origin", "Origin", "https://evil.example")
	probe("a cross-site fetch", form, "Sec-Fetch-Site", "Origin", origin, "Sec-Fetch-Site", "cross-site")
	probe("a server outside the grant", with("server", "other"), "servers other", "Origin", origin)
	probe("the form replayed", form, "stale", "Origin", origin)

	_, csrf = rig.consentForm(t, link)
	code, body := rig.post(t, url.Values{"id": {cid}, "csrf": {csrf}, "decision": {"deny"}}, "Origin", origin)
	if code != http.StatusSeeOther {
		t.Fatalf("denying: %d %s", code, body)
	}
	if code, body := rig.post(t, url.Values{"id": {cid}, "csrf": {csrf}, "decision": {"approve"}, "server": {"demo"}}, "Origin", origin); code != http.StatusForbidden {
		t.Errorf("approving after denying, with the spent form: %d %s", code, body)
	}
	resp, err := rig.publicHTTP.Get(rig.origin + "/authorize/wait?id=" + url.QueryEscape(waitID))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc, _ := url.Parse(resp.Header.Get("Location")); resp.StatusCode != http.StatusFound || loc.Query().Get("error") != "access_denied" {
		t.Errorf("back at the client after denying: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}

	rig.tn.control.SetGlobalAppCaps(nil)
	testenv.WaitFor(t, "alice's grant to go", func() bool {
		_, err := rig.broker.WhoIs(t.Context(), rig.aliceIP.String())
		return err != nil
	})
	link, _ = rig.authorize(t, client)
	if code, body := rig.get(t, rig.aliceHTTP, link.String()); code != http.StatusForbidden || !strings.Contains(body, "no tailnet grant") || strings.Contains(body, `name="csrf"`) {
		t.Errorf("the consent page to a person without a grant: %d %s, want 403", code, body)
	}
}

func (rig *consentRig) register(t *testing.T) string {
	t.Helper()
	resp, err := rig.publicHTTP.Post(rig.origin+public.RegisterPath, "application/json",
		strings.NewReader(`{"client_name":"Probe App","redirect_uris":["http://127.0.0.1:9/callback"]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		ID string `json:"client_id"`
	}
	if json.NewDecoder(resp.Body).Decode(&m); resp.StatusCode != http.StatusCreated || m.ID == "" {
		t.Fatalf("register: %d", resp.StatusCode)
	}
	return m.ID
}

var (
	consentLinkRE = regexp.MustCompile(`id="consent" href="([^"]+)"`)
	waitIDRE      = regexp.MustCompile(`url=/authorize/wait\?id=([^"]+)"`)
	csrfRE        = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

// authorize opens an authorization page of client and returns its consent
// link and the id the page polls with.
func (rig *consentRig) authorize(t *testing.T, client string) (*url.URL, string) {
	t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {"http://127.0.0.1:9/callback"},
		"code_challenge": {strings.Repeat("c", 43)}, "code_challenge_method": {"S256"}}
	code, page := rig.get(t, rig.publicHTTP, rig.origin+public.AuthorizePath+"?"+q.Encode())
	link, wait := consentLinkRE.FindStringSubmatch(page), waitIDRE.FindStringSubmatch(page)
	if code != 200 || link == nil || wait == nil {
		t.Fatalf("authorization page: %d %s", code, page)
	}
	u, err := url.Parse(html.UnescapeString(link[1]))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := url.QueryUnescape(html.UnescapeString(wait[1]))
	return u, id
}

// consentForm opens the consent page as alice and returns its form's
// answer (demo, approved) and CSRF token, checking the page cannot be
// framed.
func (rig *consentRig) consentForm(t *testing.T, link *url.URL) (url.Values, string) {
	t.Helper()
	resp, err := rig.aliceHTTP.Get(link.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := csrfRE.FindStringSubmatch(string(b))
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("the consent page: %d %s", resp.StatusCode, b)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("the consent page may be framed: CSP %q, X-Frame-Options %q", csp, resp.Header.Get("X-Frame-Options"))
	}
	return url.Values{"id": {link.Query().Get("id")}, "csrf": {m[1]}, "server": {"demo"}, "decision": {"approve"}}, m[1]
}

func (rig *consentRig) get(t *testing.T, hc *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post sends the consent form v as alice, with headers in name, value
// pairs.
func (rig *consentRig) post(t *testing.T, v url.Values, headers ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://broker.tail-scale.ts.net"+public.ConsentPath, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := rig.aliceHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
