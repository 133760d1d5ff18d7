package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/oauthtest"
	"mcpx.dev/mcpx/observe/tracing"
	"mcpx.dev/mcpx/wire"
)

// oauthSignIn signs c in to server as the person user: the daemon begins, a
// browser follows the authorization URL (user at the provider's login)
// to the redirect, and c hands back what it brought.
func oauthSignIn(t *testing.T, c *apitest.Client, server, user string) *apitest.Response {
	t.Helper()
	rt, _ := wire.Lookup(wire.OpAuthLogin)
	r := c.Do(t, "POST", rt.Path(server), `{"redirectUri": "http://127.0.0.1:9/callback"}`)
	if r.StatusCode != 200 {
		t.Fatalf("begin the sign-in as %s: %d %s", user, r.StatusCode, r.Bytes)
	}
	var l wire.AuthLogin
	r.Decode(t, &l)
	q := browseAs(t, l.AuthorizationURL, user)
	body, _ := json.Marshal(wire.AuthCallback{State: q.Get("state"), Code: q.Get("code"), Iss: q.Get("iss")})
	rt, _ = wire.Lookup(wire.OpAuthCallback)
	return c.Do(t, "POST", rt.Path(server), string(body))
}

// browseAs follows authURL as user's browser, up to the redirect back,
// and returns its query.
func browseAs(t *testing.T, authURL, user string) url.Values {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", authURL, nil)
	req.Header.Set(oauthtest.UserHeader, user)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("the authorization endpoint answered %s: %s", resp.Status, b)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc.Query()
}

// TestPerCallerSignIn: on a perCaller server two token callers each sign
// in for themselves (docs/oauth.md, "Per-caller sign-in"): before, each
// call is authorization-required; one cannot complete the other's sign-in;
// after, the resource server sees each caller's calls with that caller's
// own token and never the other's, nor a caller's bearer token; each sees
// only their own sign-in, the owner sees all; their tokens are two 0600
// files; one signing out leaves the other signed in.
func TestPerCallerSignIn(t *testing.T) {
	p := oauthtest.New(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil))
	cfg, err := config.Parse([]byte(`{"servers": {"hosted": {"url": "`+p.MCPURL()+`", "oauth": {"perCaller": true}}}}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	d := apitest.Start(t, apitest.Options{Config: cfg, Tokens: is, StateDir: state})
	mint := func(sub string) (*apitest.Client, string) {
		tok := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: sub, Rule: rights.Rule{Servers: []string{"hosted"}}}).Token
		return bearerClient(d, tok), tok
	}
	alice, aliceTok := mint("alice")
	bob, bobTok := mint("bob")
	rt, _ := wire.Lookup(wire.OpCallTool)
	call := func(c *apitest.Client, msg string) *apitest.Response {
		return c.Do(t, "POST", rt.Path("hosted", "echo"), `{"message":"`+msg+`"}`)
	}

	if r := call(alice, "early"); r.StatusCode != http.StatusForbidden || !strings.Contains(string(r.Bytes), wire.KindAuthRequired) ||
		!strings.Contains(string(r.Bytes), "perCaller") {
		t.Fatalf("alice's call before her sign-in: %d %s, want authorization-required for her", r.StatusCode, r.Bytes)
	}
	// Bob cannot complete a sign-in alice began, and cannot use it.
	lrt, _ := wire.Lookup(wire.OpAuthLogin)
	var l wire.AuthLogin
	alice.Do(t, "POST", lrt.Path("hosted"), `{"redirectUri": "http://127.0.0.1:9/callback"}`).Decode(t, &l)
	q := browseAs(t, l.AuthorizationURL, "alice")
	crt, _ := wire.Lookup(wire.OpAuthCallback)
	stolen, _ := json.Marshal(wire.AuthCallback{State: q.Get("state"), Code: q.Get("code"), Iss: q.Get("iss")})
	if r := bob.Do(t, "POST", crt.Path("hosted"), string(stolen)); r.StatusCode != http.StatusBadRequest {
		t.Errorf("bob completing alice's sign-in: %d %s, want 400", r.StatusCode, r.Bytes)
	}
	if r := call(bob, "early"); r.StatusCode != http.StatusForbidden {
		t.Errorf("bob's call after completing alice's sign-in: %d %s, want still authorization-required", r.StatusCode, r.Bytes)
	}

	for _, c := range []struct {
		cl   *apitest.Client
		user string
	}{{alice, "alice"}, {bob, "bob"}} {
		if r := oauthSignIn(t, c.cl, "hosted", c.user); r.StatusCode != 200 {
			t.Fatalf("%s signs in: %d %s", c.user, r.StatusCode, r.Bytes)
		}
	}
	for range 2 {
		for _, c := range []struct {
			cl   *apitest.Client
			user string
		}{{alice, "alice"}, {bob, "bob"}} {
			if r := call(c.cl, "from-"+c.user); r.StatusCode != 200 || !strings.Contains(string(r.Bytes), "from-"+c.user) {
				t.Fatalf("%s's call: %d %s", c.user, r.StatusCode, r.Bytes)
			}
		}
	}
	seen := map[string]int{}
	for _, req := range p.Requests() {
		for _, u := range []string{"alice", "bob"} {
			if strings.Contains(req.Body, "from-"+u) {
				seen[u]++
				if req.User != u {
					t.Errorf("%s's call reached the resource server with %q's token", u, req.User)
				}
			}
		}
	}
	if seen["alice"] != 2 || seen["bob"] != 2 {
		t.Errorf("calls seen at the resource server: %v, want 2 each", seen)
	}
	if r := d.Unix.Do(t, "POST", rt.Path("hosted", "echo"), `{"message":"owner"}`); r.StatusCode != http.StatusForbidden {
		t.Errorf("the owner's call, not signed in: %d %s, want authorization-required", r.StatusCode, r.Bytes)
	}

	// Status: each caller their own; the owner all.
	srt, _ := wire.Lookup(wire.OpAuthStatus)
	statuses := func(c *apitest.Client) (out []string) {
		var l wire.AuthStatusList
		c.Do(t, "GET", srt.Path(), "").Decode(t, &l)
		for _, s := range l.Servers {
			out = append(out, s.Server+" "+s.Caller+" "+map[bool]string{true: "in", false: "out"}[s.SignedIn])
		}
		return out
	}
	if got := strings.Join(statuses(alice), ","); got != "hosted @jwt:alice in" {
		t.Errorf("alice's auth status: %q, want her own sign-in alone", got)
	}
	if got := strings.Join(statuses(d.Unix), ","); got != "hosted  out,hosted @jwt:alice in,hosted @jwt:bob in" {
		t.Errorf("the owner's auth status: %q, want its own and every caller's", got)
	}
	files, _ := filepath.Glob(filepath.Join(state, "oauth", "callers", "hosted", "*.json"))
	if len(files) != 2 {
		t.Errorf("the callers' sign-ins: %v, want two files", files)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", f, fi.Mode(), err)
		}
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), aliceTok) || strings.Contains(string(b), bobTok) {
			t.Errorf("%s holds a caller's own bearer token", f)
		}
	}

	lort, _ := wire.Lookup(wire.OpAuthLogout)
	if r := alice.Do(t, "DELETE", lort.Path("hosted"), ""); r.StatusCode != 200 {
		t.Fatalf("alice signs out: %d %s", r.StatusCode, r.Bytes)
	}
	if r := call(alice, "late"); r.StatusCode != http.StatusForbidden {
		t.Errorf("alice's call after her sign-out: %d %s, want authorization-required", r.StatusCode, r.Bytes)
	}
	if r := call(bob, "from-bob"); r.StatusCode != 200 {
		t.Errorf("bob's call after alice signed out: %d %s", r.StatusCode, r.Bytes)
	}
}

// TestSignInByURLElicitation: over /mcp, a call to a server that needs
// sign-in asks an MCP client that declared URL-mode elicitation to open
// the authorization link (docs/oauth.md, "Signing in from the MCP
// client"); its browser comes back to the daemon's loopback listener, and
// the call goes on and answers. A client without URL mode gets the error
// naming the command at once, and nothing is begun for it.
func TestSignInByURLElicitation(t *testing.T) {
	p := oauthtest.New(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil))
	cfg, err := config.Parse([]byte(`{"servers": {"hosted": {"url": "`+p.MCPURL()+`"}, "other": {"url": "`+p.MCPURL()+`"}}}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: cfg, StateDir: t.TempDir()})
	var asked []string
	var pages []string
	_, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params.Mode+" "+r.Params.Message)
			// The person's browser: the provider's login, then back to the daemon.
			req, _ := http.NewRequestWithContext(ctx, "GET", r.Params.URL, nil)
			req.Header.Set(oauthtest.UserHeader, "owner")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			pages = append(pages, fmt.Sprintf("%d %s", resp.StatusCode, b))
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	if got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "hosted__echo", Arguments: map[string]any{"message": "after sign-in"}}); got != "after sign-in" {
		t.Errorf("the call that waited for the sign-in: %q", got)
	}
	if len(asked) != 1 || !strings.HasPrefix(asked[0], "url Sign in to hosted") || len(pages) != 1 || !strings.HasPrefix(pages[0], "200 Signed in to hosted") {
		t.Errorf("asked %q, the browser saw %q; want one URL elicitation and the daemon's page", asked, pages)
	}
	if users := p.Requests(); len(users) == 0 || users[len(users)-1].User != "owner" {
		t.Errorf("the resource server's requests: %+v, want the new sign-in's token", users)
	}

	_, plain := d.ConnectMCP(t, "/mcp", "2025-11-25", &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
	})
	registered := p.Registered()
	res, err := plain.CallTool(t.Context(), &mcp.CallToolParams{Name: "other__echo", Arguments: map[string]any{"message": "x"}})
	if err == nil && !res.IsError {
		t.Fatalf("a client without URL mode, not signed in to other: %+v, want an error", res)
	}
	if msg := fmt.Sprint(err, res); !strings.Contains(msg, "mcpx auth login other") {
		t.Errorf("a client without URL mode: %s, want the command named", msg)
	}
	if p.Registered() != registered {
		t.Error("a sign-in was begun for a client that cannot be asked")
	}
}

// TestNoSecretAnywhere runs a full sign-in (registration, code, PKCE),
// calls that refresh the token on every one (each comes after the
// token of a second expired), a stdio child beside it, and a sign-out with
// revocation, with tracing on and records kept; then no token, code,
// verifier or client secret the provider handed out or was sent is in the
// daemon's log, its events, its call records, its spans, its metrics, any
// problem body it answered, or the argv of any process it started.
func TestNoSecretAnywhere(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	defer tracing.Use(tp)()
	p := oauthtest.New(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil))
	p.ExpiresIn = 1 // a second: each call below, a second after the last token, refreshes first
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`})
	hosted, err := config.Parse([]byte(`{"servers": {"hosted": {"url": "`+p.MCPURL()+`"}}}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers["hosted"] = hosted.Servers["hosted"]
	state := t.TempDir()
	d := apitest.Start(t, apitest.Options{Config: cfg, StateDir: state})
	rt, _ := wire.Lookup(wire.OpCallTool)
	var seen strings.Builder // everything the daemon said or kept
	call := func(server, msg string, want int) {
		r := d.Unix.Do(t, "POST", rt.Path(server, "echo"), `{"message":"`+msg+`"}`)
		seen.Write(r.Bytes)
		if r.StatusCode != want {
			t.Fatalf("call %s: %d %s, want %d", server, r.StatusCode, r.Bytes, want)
		}
	}
	call("hosted", "before", http.StatusForbidden)
	if r := oauthSignIn(t, d.Unix, "hosted", "owner"); r.StatusCode != 200 {
		t.Fatalf("sign in: %d %s", r.StatusCode, r.Bytes)
	}
	time.Sleep(time.Second) // the token's life: not a figure, the refresh's cause
	call("hosted", "one", 200)
	time.Sleep(time.Second)
	call("hosted", "two", 200)
	call("demo", "child", 200)
	for _, pid := range childPids(t) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		seen.Write(b)
	}
	lort, _ := wire.Lookup(wire.OpAuthLogout)
	if r := d.Unix.Do(t, "DELETE", lort.Path("hosted"), ""); r.StatusCode != 200 || !strings.Contains(string(r.Bytes), `"revoked":true`) {
		t.Fatalf("sign out: %d %s", r.StatusCode, r.Bytes)
	}
	call("hosted", "after", http.StatusForbidden)
	for _, op := range []string{wire.OpEvents, wire.OpMetrics, wire.OpAuthStatus} {
		r, _ := wire.Lookup(op)
		seen.Write(d.Unix.Do(t, "GET", r.Path()+"?follow=false", "").Bytes)
	}
	if !strings.Contains(seen.String(), "auth-refreshed") {
		t.Error("no auth-refreshed event: the run did not refresh")
	}
	filepath.WalkDir(filepath.Join(state, "records"), func(path string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			b, _ := os.ReadFile(path)
			seen.Write(b)
		}
		return nil
	})
	for _, s := range rec.Ended() {
		fmt.Fprintln(&seen, s.Name(), s.Status(), s.Attributes(), s.Events())
	}
	seen.WriteString(d.Logs.String())
	secrets := p.Issued()
	if len(secrets) < 8 { // a secret, a code, a verifier, three access and three refresh tokens at least
		t.Fatalf("the provider handed out %d secrets; the run is not what this test means", len(secrets))
	}
	for _, s := range secrets {
		if strings.Contains(seen.String(), s) {
			t.Errorf("a secret (%.10s…) is in what the daemon said or kept", s)
		}
	}
}

// childPids are the processes whose parent is this test process.
func childPids(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so read after its ")".
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			out = append(out, pid)
		}
	}
	if len(out) == 0 {
		t.Error("no child process found: the argv check checked nothing")
	}
	return out
}

// TestDashboardSignInButton is what the dashboard's "Sign in" button does
// (api/dashboard/assets/ui/app.js, signInButton): the page's session, with
// its CSRF secret, begins a sign-in whose redirect URI is the page's own
// origin's /v1/auth/redirect; the browser opens the link in a tab, with
// neither cookie nor Mcpx-Client, signs in at the provider, and is sent
// back to the daemon, which completes the sign-in and says so.
func TestDashboardSignInButton(t *testing.T) {
	p := oauthtest.New(t, nil)
	cfg, err := config.Parse([]byte(`{"servers": {"hosted": {"url": "`+p.MCPURL()+`"}}}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: cfg})
	b := browser(d)
	cookie, csrf := signIn(t, b, apitest.Token)
	page := []string{"Content-Type", "application/json", wire.HeaderClient, "mcpx-dashboard", "Cookie", cookie, wire.HeaderCSRF, csrf}
	var st wire.AuthStatusList
	b.Do(t, "GET", "/v1/auth", "", page...).Decode(t, &st)
	if len(st.Servers) != 1 || st.Servers[0].SignedIn {
		t.Fatalf("the page's /v1/auth: %+v, want hosted, not signed in (the button shows)", st.Servers)
	}
	lrt, _ := wire.Lookup(wire.OpAuthLogin)
	r := b.Do(t, "POST", lrt.Path("hosted"), `{"redirectUri": "http://`+d.TCPAddr+`/v1/auth/redirect"}`, page...)
	if r.StatusCode != 200 {
		t.Fatalf("the button's request: %d %s", r.StatusCode, r.Bytes)
	}
	var l wire.AuthLogin
	r.Decode(t, &l)
	resp, err := http.Get(l.AuthorizationURL) // the new tab: the provider, then back to the daemon
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "Signed in to hosted") || resp.Request.URL.Host != d.TCPAddr {
		t.Errorf("the tab ended at %s: %d %s, want the daemon's page", resp.Request.URL, resp.StatusCode, body)
	}
	b.Do(t, "GET", "/v1/auth", "", page...).Decode(t, &st)
	if len(st.Servers) != 1 || !st.Servers[0].SignedIn {
		t.Errorf("after the tab: %+v, want signed in (the button goes)", st.Servers)
	}
	if again, err := http.Get(resp.Request.URL.String()); err != nil || again.StatusCode != http.StatusBadRequest {
		t.Errorf("the redirect again (its state spent): %v %v, want 400", again, err)
	}
}
