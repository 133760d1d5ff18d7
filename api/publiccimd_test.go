package api_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
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

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/oauthtest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// browserStep plays the person's browser for an authorization URL: it
// opens the page, has the sign-in approved, and follows the page back to
// the client's redirect URI. It is the one step of the sign-in tests that
// a consent page in a real browser replaces.
type browserStep func(t *testing.T, authURL string)

// approveByCode reads the code the authorization page shows, has the
// owner approve it over the unix socket for the servers given (what
// `mcpx auth approve CODE --servers …` does), and follows the page back
// to the client.
func approveByCode(d *apitest.Daemon, hc *http.Client, servers ...string) browserStep {
	return func(t *testing.T, authURL string) {
		get := func(u string) (*http.Response, string) {
			resp, err := hc.Get(u)
			if err != nil {
				t.Errorf("the browser: %v", err)
				return nil, ""
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, string(b)
		}
		_, page := get(authURL)
		code := regexp.MustCompile(`id="code">([A-Z]{4}-[A-Z]{4})<`).FindStringSubmatch(page)
		wait := regexp.MustCompile(`url=(/authorize/wait\?id=[^"]+)"`).FindStringSubmatch(page)
		if code == nil || wait == nil {
			t.Errorf("the authorization page: %s", page)
			return
		}
		b, _ := json.Marshal(map[string]any{"code": code[1], "servers": servers})
		if r := d.Unix.Do(t, "POST", "/v1/public/approve", string(b)); r.StatusCode != 200 {
			t.Errorf("approve: %d %s", r.StatusCode, r.Bytes)
			return
		}
		u, _ := url.Parse(authURL)
		// The page moves on by itself: the wait page answers 200 until the
		// approval, then sends the browser (following) to the client.
		if resp, _ := get(u.Scheme + "://" + u.Host + strings.ReplaceAll(wait[1], "&amp;", "&")); resp == nil || resp.Request.URL.Path != "/callback" {
			t.Errorf("the browser did not come back to the client")
		}
	}
}

// TestPublicSignInTypeScriptCIMD: the TypeScript SDK's client, with its
// OAuth provider identified by a Client ID Metadata Document served by a
// loopback HTTPS host, signs in to the public face (served over TLS), the
// owner approving it for the demo server by the page's code; it then
// lists and calls that server's tools only, refreshes a bad access token,
// revokes its token and fails cleanly after. The face fetched the
// document once and nobody registered (DCR).
func TestPublicSignInTypeScriptCIMD(t *testing.T) {
	t.Parallel()
	node := testenv.Node(t)
	docs := oauthtest.NewMetadataHost(t, "TS SDK CIMD test")
	pool := x509.NewCertPool()
	pool.AddCert(docs.Certificate())
	pub := startTLSPublic(t, public.FetchTest{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, RootCAs: pool})
	browser := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pub.pool}}}
	var browse browserStep = approveByCode(pub.Daemon, browser, "demo")

	metadataURL := docs.ClientID()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	script := filepath.Join(testenv.RepoRoot(t), "testdata", "npm", "clients", "mcp-ts-oauth.mjs")
	cmd := exec.CommandContext(ctx, node, script, pub.origin+"/mcp", metadataURL)
	// Its own marker: the client is this test's child, not one another
	// test's leak check may find (proctest).
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+pub.caFile, proctest.Env(t))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var result string
	var wg sync.WaitGroup
	for sc := bufio.NewScanner(stdout); sc.Scan(); {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "callback":
			docs.SetRedirect(rest)
		case "authorize":
			wg.Go(func() { browse(t, rest) })
		case "result":
			result = rest
		}
	}
	err := cmd.Wait()
	wg.Wait()
	var out struct {
		First, Iss, ClientID, Echo, EchoAfterRefresh, AfterRevoke, Error, CallbackError string
		StateMatches, Refreshed                                                         bool
		Tools                                                                           []string
		RevokeStatus, Authorizations                                                    int
	}
	if err != nil || json.Unmarshal([]byte(result), &out) != nil || out.Error != "" {
		t.Fatalf("the TypeScript client: %v %s\n%s\n%s", err, result, out.Error, stderr.String())
	}
	if out.First != "unauthorized" || out.Iss != pub.origin || !out.StateMatches || out.CallbackError != "" || out.ClientID != metadataURL {
		t.Errorf("the sign-in: %+v", out)
	}
	if len(out.Tools) == 0 || slices.ContainsFunc(out.Tools, func(s string) bool { return !strings.HasPrefix(s, "demo__") }) {
		t.Errorf("tools %v; the owner approved demo only", out.Tools)
	}
	if out.Echo != "signed in by CIMD" || !out.Refreshed || out.EchoAfterRefresh != "refreshed" {
		t.Errorf("calls and refresh: %+v", out)
	}
	if out.RevokeStatus != 200 || out.AfterRevoke != "unauthorized" || out.Authorizations != 2 {
		t.Errorf("after revocation: %+v", out)
	}
	if n := docs.Fetches(); n != 1 {
		t.Errorf("the metadata document was fetched %d times; want 1 (it is kept by its Cache-Control)", n)
	}
	if pub.hits(public.RegisterPath) != 0 || pub.hits(public.TokenPath) < 2 {
		t.Errorf("the face's paths: /register %d, /token %d; want no registration, a code and a refresh", pub.hits(public.RegisterPath), pub.hits(public.TokenPath))
	}
}

// tlsPublic is a daemon of the demo servers "demo" and "other" whose
// public face is served over TLS on loopback, at its own origin.
type tlsPublic struct {
	*apitest.Daemon
	face   *public.Face
	origin string // https://127.0.0.1:port
	pool   *x509.CertPool
	caFile string // the certificate, PEM, for NODE_EXTRA_CA_CERTS
	mu     sync.Mutex
	paths  map[string]int
}

func (p *tlsPublic) hits(path string) int { p.mu.Lock(); defer p.mu.Unlock(); return p.paths[path] }

func startTLSPublic(t *testing.T, ft public.FetchTest) *tlsPublic {
	t.Helper()
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tlsPublic{origin: "https://" + ln.Addr().String(), paths: map[string]int{}}
	cert, pemBytes := oauthtest.LoopbackCert(t)
	p.pool = x509.NewCertPool()
	p.pool.AppendCertsFromPEM(pemBytes)
	p.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p.caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	p.face, err = public.New(public.Options{URL: p.origin, Tokens: st, Limit: public.Limit{Rate: 1000, Burst: 1000}, FetchTest: ft})
	if err != nil {
		t.Fatal(err)
	}
	var pub http.Handler
	p.Daemon = apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": "", "other": ""}),
		API: func(o *api.Options) { o.Public = p.face },
		Handler: func(o api.Options) http.Handler {
			f := api.NewFaces(o)
			pub = f.Public
			return f.Private
		}})
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.paths[r.URL.Path]++
		p.mu.Unlock()
		pub.ServeHTTP(w, r)
	})
	tln := tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := api.Serve(ctx, tln, counted, api.ServeOptions{DrainTimeout: time.Second}); err != nil {
			t.Errorf("serving the public face: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return p
}
