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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
)

// publicOrigin is the public URL the tests' faces answer as.
const publicOrigin = "https://mcpx.example"

// publicDaemon is a daemon of the demo servers "demo" and "other" with a
// public face served on its own loopback listener.
type publicDaemon struct {
	*apitest.Daemon
	tokens *access.Store
	face   *public.Face
	base   string // the public listener's http://host:port
	now    time.Time
	mu     sync.Mutex
}

func startPublic(t *testing.T) *publicDaemon { t.Helper(); return startPublicWith(t, nil) }

// startPublicWith is startPublic with the face's options changed by opts.
func startPublicWith(t *testing.T, opts func(*public.Options)) *publicDaemon {
	t.Helper()
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &publicDaemon{tokens: st, now: time.Now()}
	st.SetClock(func() time.Time { p.mu.Lock(); defer p.mu.Unlock(); return p.now })
	o := public.Options{URL: publicOrigin, Tokens: st, Limit: public.Limit{Rate: 1000, Burst: 1000}}
	if opts != nil {
		opts(&o)
	}
	p.face, err = public.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.face.Close)
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box"}) // signed tokens: callers who are not the owner
	if err != nil {
		t.Fatal(err)
	}
	var pub http.Handler
	p.Daemon = apitest.Start(t, apitest.Options{Tokens: is, Config: apitest.DemoConfig(t, map[string]string{"demo": "", "other": ""}),
		API: func(o *api.Options) { o.Public = p.face },
		Handler: func(o api.Options) http.Handler {
			f := api.NewFaces(o)
			pub = f.Public
			return f.Private
		}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := api.Serve(ctx, ln, pub, api.ServeOptions{DrainTimeout: time.Second}); err != nil {
			t.Errorf("serving the public face: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	p.base = "http://" + ln.Addr().String()
	return p
}

// issue makes a live token of the face.
func (p *publicDaemon) issue(t *testing.T, g access.Grant) string {
	t.Helper()
	if g.Client == "" {
		g.Client = "https://client.example/cm.json"
	}
	if g.Scopes == nil {
		g.Scopes = []string{public.Scope}
	}
	secret, _, err := p.tokens.Issue(g)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// do sends a request to the public listener.
func (p *publicDaemon) do(t *testing.T, method, path, body string, headers ...string) *apitest.Response {
	t.Helper()
	return (&apitest.Client{Base: p.base, HTTP: &http.Client{}}).Do(t, method, path, body, headers...)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`

var mcpHeaders = []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}

// TestPublicFaceServesOnlyMCP: on the public listener the REST API, the
// dashboard, events, metrics and /healthz are 404, with a token or
// without; the private faces' OAuth 404s are not its business, but its
// own metadata is there (and only there: TestFacesNeverTripClients).
func TestPublicFaceServesOnlyMCP(t *testing.T) {
	t.Parallel()
	p := startPublic(t)
	tok := p.issue(t, access.Grant{Resource: publicOrigin + "/mcp", Rights: rights.All()})
	for _, path := range []string{"/v1/servers", "/v1/whoami", "/v1/events", "/v1/tokens", "/v1/daemon/stop", "/", "/docs", "/login",
		"/metrics", "/healthz", "/v1/openapi.json", "/.well-known/oauth-authorization-server/x", "/mcpx", "/mcp/../v1/servers"} {
		for _, authz := range []string{"", "Bearer " + tok, "Bearer " + apitest.Token} {
			r := p.do(t, "GET", path, "", "Authorization", authz, "Mcpx-Client", "test")
			if r.StatusCode != http.StatusNotFound || r.Header.Get("WWW-Authenticate") != "" || strings.Contains(string(r.Bytes), "servers\"") {
				t.Errorf("GET %s (auth %t): %d %s, want a bare 404", path, authz != "", r.StatusCode, r.Bytes)
			}
		}
	}
	if r := p.do(t, "POST", "/v1/daemon/stop", "{}", "Authorization", "Bearer "+apitest.Token, "Mcpx-Client", "x"); r.StatusCode != http.StatusNotFound {
		t.Errorf("POST /v1/daemon/stop: %d", r.StatusCode)
	}
}

// TestPublicFaceMetadata: the protected resource metadata of /mcp and of
// /mcp/<server> (RFC 9728), naming this face as its authorization server.
func TestPublicFaceMetadata(t *testing.T) {
	t.Parallel()
	p := startPublic(t)
	for path, want := range map[string]string{
		public.PRMPath:              publicOrigin + "/mcp",
		public.PRMPath + "/mcp":     publicOrigin + "/mcp",
		public.PRMPath + "/mcp/git": publicOrigin + "/mcp/git",
	} {
		r := p.do(t, "GET", path, "")
		var doc struct {
			Resource string   `json:"resource"`
			AS       []string `json:"authorization_servers"`
			Scopes   []string `json:"scopes_supported"`
		}
		if r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.StatusCode, r.Bytes)
		}
		r.Decode(t, &doc)
		if doc.Resource != want || len(doc.AS) != 1 || doc.AS[0] != publicOrigin || len(doc.Scopes) != 1 || doc.Scopes[0] != public.Scope {
			t.Errorf("GET %s: %+v", path, doc)
		}
	}
	for _, path := range []string{public.PRMPath + "/mcp/a/b", public.PRMPath + "/v1", public.PRMPath + "/mcp/" + strings.Repeat("x", 80)} {
		if r := p.do(t, "GET", path, ""); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, r.StatusCode)
		}
	}
}

// TestPublicFaceRefusals: no token is a 401 whose one challenge names the
// metadata and the scope; a token of another resource, another server, an
// expired one, a revoked one, the daemon's or an owner token, or forged
// identity headers are 401 invalid_token; a token without the scope is
// 403 insufficient_scope. No answer echoes the token sent.
func TestPublicFaceRefusals(t *testing.T) {
	t.Parallel()
	p := startPublic(t)
	r := p.do(t, "POST", "/mcp", initBody, mcpHeaders...)
	ch := r.Header.Get("WWW-Authenticate")
	if r.StatusCode != http.StatusUnauthorized || ch != `Bearer resource_metadata="`+publicOrigin+`/.well-known/oauth-protected-resource/mcp", scope="mcp"` {
		t.Fatalf("no token: %d %q", r.StatusCode, ch)
	}
	var rpc struct {
		Error struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(r.Bytes, &rpc); err != nil || !strings.Contains(rpc.Error.Message, "sign-in") {
		t.Fatalf("no token: body %s (%v)", r.Bytes, err)
	}
	if r := p.do(t, "POST", "/mcp/demo", initBody, mcpHeaders...); !strings.Contains(r.Header.Get("WWW-Authenticate"), `/.well-known/oauth-protected-resource/mcp/demo"`) {
		t.Errorf("/mcp/demo's challenge: %q", r.Header.Get("WWW-Authenticate"))
	}

	all := rights.All()
	other := p.issue(t, access.Grant{Resource: "https://elsewhere.example/mcp", Rights: all})
	demoOnly := p.issue(t, access.Grant{Resource: publicOrigin + "/mcp/demo", Rights: all})
	noScope := p.issue(t, access.Grant{Resource: publicOrigin + "/mcp", Rights: all, Scopes: []string{"other"}})
	short := p.issue(t, access.Grant{Resource: publicOrigin + "/mcp", Rights: all, TTL: time.Minute})
	revoked, rtok, err := p.tokens.Issue(access.Grant{Client: "c", Resource: publicOrigin + "/mcp", Rights: all, Scopes: []string{public.Scope}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.tokens.Revoke(rtok.ID); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.now = p.now.Add(2 * time.Minute)
	p.mu.Unlock()
	cases := []struct {
		name, path, secret string
		headers            []string
		status             int
		code               string
	}{
		{"another resource", "/mcp", other, nil, 401, "invalid_token"},
		{"a server's token on /mcp", "/mcp", demoOnly, nil, 401, "invalid_token"},
		{"a server's token on another server", "/mcp/other", demoOnly, nil, 401, "invalid_token"},
		{"expired", "/mcp", short, nil, 401, "invalid_token"},
		{"revoked", "/mcp", revoked, nil, 401, "invalid_token"},
		{"the daemon's token", "/mcp", apitest.Token, nil, 401, "invalid_token"},
		{"an owner token", "/mcp", "mcpx_" + strings.Repeat("A", 43), nil, 401, "invalid_token"},
		{"forged identity headers", "/mcp", "", []string{"Tailscale-User-Login", "owner@example.com", "X-Forwarded-For", "127.0.0.1",
			"Mcpx-Client", "mcpx", "Mcpx-Pid", "1", "Cookie", "mcpx_session=x"}, 401, ""},
		{"no scope", "/mcp", noScope, nil, 403, "insufficient_scope"},
	}
	for _, c := range cases {
		h := append(append([]string{}, mcpHeaders...), c.headers...)
		if c.secret != "" {
			h = append(h, "Authorization", "Bearer "+c.secret)
		}
		r := p.do(t, "POST", c.path, initBody, h...)
		ch := r.Header.Get("WWW-Authenticate")
		switch {
		case r.StatusCode != c.status:
			t.Errorf("%s: %d %s, want %d", c.name, r.StatusCode, r.Bytes, c.status)
		case c.code != "" && !strings.Contains(ch, `error="`+c.code+`"`), !strings.Contains(ch, "resource_metadata="):
			t.Errorf("%s: challenge %q, want error %q", c.name, ch, c.code)
		case c.secret != "" && (strings.Contains(string(r.Bytes), c.secret) || strings.Contains(ch, c.secret)):
			t.Errorf("%s: the answer echoes the token", c.name)
		}
	}
	// The good token of the same shape is admitted: the refusals above
	// are the token's, not the test's.
	if r := p.do(t, "POST", "/mcp/demo", initBody, append(mcpHeaders, "Authorization", "Bearer "+demoOnly)...); r.StatusCode != http.StatusOK {
		t.Errorf("a server's token on its server: %d %s", r.StatusCode, r.Bytes)
	}
}

// TestPublicFaceServesTheTokensRights: a client with a token of /mcp whose
// rights name one server lists and calls that server's tools only; the
// other server is not found.
func TestPublicFaceServesTheTokensRights(t *testing.T) {
	t.Parallel()
	p := startPublic(t)
	tok := p.issue(t, access.Grant{Resource: publicOrigin + "/mcp", Rights: rights.Rights{{Servers: []string{"demo"}}}})
	c := mcp.NewClient(&mcp.Implementation{Name: "public-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: p.base + "/mcp", HTTPClient: &http.Client{Transport: apitest.Bearer{Token: tok}}, MaxRetries: -1}
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if strings.HasPrefix(tl.Name, "other__") {
			t.Errorf("tool %s of a server the token does not name is listed", tl.Name)
		}
	}
	if got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"message": "from afar"}}); got != "from afar" {
		t.Fatalf("demo__echo = %q (tools %v)", got, names)
	}
	if r := p.do(t, "POST", "/mcp/other", initBody, append(mcpHeaders, "Authorization", "Bearer "+tok)...); r.StatusCode != http.StatusNotFound {
		t.Errorf("/mcp/other with a token for demo: %d %s, want 404", r.StatusCode, r.Bytes)
	}
}
