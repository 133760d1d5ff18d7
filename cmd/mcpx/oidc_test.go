package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/oidctest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestSignInAtOIDCProvider is issue 33's acceptance test with real parts
// (internal/testing/oidctest): oidc-provider from npm in front of a
// resource server built with the TypeScript MCP SDK that asks the
// provider about every token; access tokens of 5 s; only loopback, as the
// machine has no network.
//
// The owner signs in with `mcpx auth login`, through the provider's own
// login and consent pages in headless Chromium (the command's $BROWSER);
// a call goes through REST (`mcpx call`), /mcp (a go-sdk client) and a
// script (`mcpx exec`), each after the access token before it expired:
// the provider saw refreshes, each rotating the refresh token, and the
// resource server answered no request that carried a token with 401. The
// refresh token a rotation replaced is refused (and, its reuse detected,
// the provider revokes the sign-in): the next call is one clear
// authorization-required, and the one after it fails at once without a
// request to either server — no loop. `mcpx auth login --broker <url>` of
// a second daemon, on loopback TCP as a remote broker is, signs in with
// the browser on the CLI's side; revoking the grant at the provider makes
// its next call authorization-required, once. No token or client secret
// is in either daemon's log.
func TestSignInAtOIDCProvider(t *testing.T) {
	// Not parallel: its daemons run in this process, which becomes their
	// child subreaper; the orphans of the parallel scripts' daemons would
	// come to it and stay zombies once its daemons' reapers stop.
	testenv.Node(t)
	proctest.CheckNoLeaks(t)
	start := time.Now()
	h := oidctest.Start(t, oidctest.Options{})
	t.Logf("%v: the provider and resource server serve", time.Since(start))
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	cfg, _ := json.Marshal(map[string]any{"log": map[string]any{"level": "debug"},
		"servers": map[string]any{"hosted": map[string]any{"url": h.MCPURL}}})
	testenv.WriteFile(t, cfgPath, string(cfg))
	local := startDaemon(t, filepath.Join(dir, "local"), cfgPath, "off")
	remote := startDaemon(t, filepath.Join(dir, "remote"), cfgPath, "127.0.0.1:0")
	env := map[string]string{"BROWSER": h.Browser(t, "alice"), "HOME": filepath.Join(dir, "home"),
		"XDG_CONFIG_HOME": filepath.Join(dir, "xdg", "config"), "XDG_STATE_HOME": filepath.Join(dir, "xdg", "state"),
		"XDG_CACHE_HOME": filepath.Join(dir, "xdg", "cache"), "MCPX_NO_AUTOSTART": "1"}
	mcpx := func(args ...string) (int, string, string) {
		var stdout, stderr testenv.SyncBuffer
		cmd, _ := lookup(args[0])
		c := &cli{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(k string) string {
			if v, ok := env[k]; ok {
				return v
			}
			return os.Getenv(k)
		}}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a sign-in that went wrong waits no longer
		defer cancel()
		code := cmd.run(ctx, c, args[1:])
		return code, stdout.String(), stderr.String()
	}

	if code, _, stderr := mcpx("call", "--broker", local.sock, "hosted.whoami", "{}"); code != exitFailed || !strings.Contains(stderr, "mcpx auth login hosted") {
		t.Fatalf("a call before sign-in: exit %d, %s; want 4 and authorization-required naming the command", code, stderr)
	}
	if code, stdout, stderr := mcpx("auth", "login", "--broker", local.sock, "hosted"); code != exitOK || !strings.Contains(stdout, "signed in to hosted") {
		t.Fatalf("mcpx auth login: exit %d\n%s%s\nthe browser: %+v", code, stdout, stderr, h.Landings(t))
	}
	checkLanding(t, h.Landings(t), "")
	t.Logf("%v: signed in", time.Since(start))

	// A call through each face, each after the token before it expired.
	first := readSignIn(t, local.state)
	if code, stdout, stderr := mcpx("call", "--broker", local.sock, "hosted.whoami", "{}"); code != exitOK || stdout != "alice\n" {
		t.Fatalf("REST: mcpx call: exit %d, %q %s", code, stdout, stderr)
	}
	waitPast(first.Expiry)
	if got := callOverMCP(t, local.sock, "hosted__whoami"); got != "alice" {
		t.Errorf("/mcp: hosted__whoami answered %q, want alice", got)
	}
	second := readSignIn(t, local.state)
	waitPast(second.Expiry)
	if code, stdout, stderr := mcpx("exec", "--runtime", "node", "--broker", local.sock,
		`return (await hosted.whoami({})).content[0].text`); code != exitOK || stdout != "\"alice\"\n" {
		t.Fatalf("a script: mcpx exec: exit %d, %q %s\nthe provider: %+v\nthe daemon:\n%s", code, stdout, stderr, h.Grants(t), local.log.String())
	}
	third := readSignIn(t, local.state)
	t.Logf("%v: called through REST, /mcp and a script", time.Since(start))
	if t.Failed() {
		t.Fatalf("the provider: %+v\nthe daemon:\n%s", h.Grants(t), local.log.String())
	}
	if first.RefreshToken == second.RefreshToken || second.RefreshToken == third.RefreshToken {
		t.Errorf("the refresh token was not rotated at each refresh")
	}
	refreshes := 0
	for _, g := range h.Grants(t) {
		if g.Type == "refresh_token" {
			refreshes++
			if !g.OK || !g.Rotated || g.Account != "alice" {
				t.Errorf("a refresh the provider answered: %+v; want ok and rotated, for alice", g)
			}
		}
	}
	if refreshes < 2 {
		t.Errorf("the provider saw %d refreshes, want one per expired token (2)", refreshes)
	}
	for _, r := range h.Seen(t) {
		if r.Token != "" && (r.Status == http.StatusUnauthorized || r.Sub != "alice") {
			t.Errorf("the resource server answered a %s with a token %d (subject %q): a request went out with a token it refused", r.Method, r.Status, r.Sub)
		}
	}

	// Rotation: the replaced refresh token is refused; its reuse revokes
	// the sign-in at the provider: one authorization-required, no loop.
	if status, body := refreshAt(t, first); status != http.StatusBadRequest || !strings.Contains(body, "invalid_grant") {
		t.Errorf("the refresh token a rotation replaced: %d %s; want 400 invalid_grant", status, body)
	}
	grants := len(h.Grants(t))
	if code, _, stderr := mcpx("call", "--broker", local.sock, "hosted.whoami", "{}"); code != exitFailed || !strings.Contains(stderr, "authorization-required") ||
		!strings.Contains(stderr, "mcpx auth login hosted") {
		t.Errorf("a call after the provider revoked the sign-in: exit %d, %s; want 4, authorization-required naming the command", code, stderr)
	}
	after := h.Grants(t)[grants:]
	if len(after) != 1 || after[0].Type != "refresh_token" || after[0].OK {
		t.Errorf("after the revocation the provider saw %+v; want one refused refresh", after)
	}
	grants, seen := len(h.Grants(t)), len(h.Seen(t))
	if code, _, stderr := mcpx("call", "--broker", local.sock, "hosted.whoami", "{}"); code != exitFailed || !strings.Contains(stderr, "authorization-required") {
		t.Errorf("the call after that: exit %d, %s; want authorization-required at once", code, stderr)
	}
	if g, s := len(h.Grants(t)), len(h.Seen(t)); g != grants || s != seen {
		t.Errorf("the call after that reached the provider (%d requests) or the resource server (%d): a loop", g-grants, s-seen)
	}

	t.Logf("%v: rotation and reuse", time.Since(start))

	// The remote broker: the CLI's own listener and browser, its token.
	tokenFile := filepath.Join(dir, "remote-token")
	testenv.WriteFile(t, tokenFile, remote.rec.Token)
	if code, stdout, stderr := mcpx("auth", "login", "--broker", remote.rec.URL, "--token-file", tokenFile, "hosted"); code != exitOK ||
		!strings.Contains(stdout, "signed in to hosted") {
		t.Fatalf("mcpx auth login --broker %s: exit %d\n%s%s", remote.rec.URL, code, stdout, stderr)
	}
	checkLanding(t, h.Landings(t), remote.rec.URL)
	remoteCall := func() (int, string, string) {
		return mcpx("call", "--broker", remote.rec.URL, "--token-file", tokenFile, "hosted.whoami", "{}")
	}
	if code, stdout, stderr := remoteCall(); code != exitOK || stdout != "alice\n" {
		t.Fatalf("a call through the remote broker: exit %d, %q %s", code, stdout, stderr)
	}
	if n := h.Revoke(t, "alice"); n == 0 {
		t.Fatal("alice had no grant at the provider to revoke")
	}
	grants = len(h.Grants(t))
	if code, _, stderr := remoteCall(); code != exitFailed || !strings.Contains(stderr, "authorization-required") {
		t.Errorf("a call after revocation at the provider: exit %d, %s; want authorization-required", code, stderr)
	}
	if code, _, stderr := remoteCall(); code != exitFailed || !strings.Contains(stderr, "authorization-required") {
		t.Errorf("the call after that: exit %d, %s; want authorization-required", code, stderr)
	}
	if after := h.Grants(t)[grants:]; len(after) != 1 || after[0].OK {
		t.Errorf("after revocation the provider saw %+v; want one refused refresh, then nothing", after)
	}

	t.Logf("%v: the remote broker", time.Since(start))
	var secrets []string
	for _, r := range h.Seen(t) {
		secrets = append(secrets, r.Token)
	}
	for _, s := range []signIn{first, second, third, readSignIn(t, remote.state)} {
		secrets = append(secrets, s.RefreshToken, s.AccessToken, s.Client.Secret)
	}
	for _, d := range []*testDaemon{local, remote} {
		file, _ := os.ReadFile(filepath.Join(d.state, "logs", "mcpx.jsonl"))
		log := d.log.String() + string(file)
		for _, s := range secrets {
			if len(s) >= 8 && strings.Contains(log, s) {
				t.Errorf("a daemon's log holds a token or secret (%.6s…)", s)
			}
		}
	}
}

// checkLanding: one sign-in went through the provider's login and
// consent pages and landed on the CLI's listener, not on notOn (a
// daemon's address).
func checkLanding(t *testing.T, ls []oidctest.Landing, notOn string) {
	t.Helper()
	if len(ls) != 1 {
		t.Fatalf("the browser signed in %d times, want once: %+v", len(ls), ls)
	}
	l := ls[0]
	u, err := url.Parse(l.Landed)
	if err != nil || u.Hostname() != "127.0.0.1" || u.Path != "/callback" || !slices.Equal(l.Pages, []string{"login", "consent"}) ||
		!strings.HasPrefix(l.Text, "Signed in to hosted") || (notOn != "" && strings.HasPrefix(l.Landed, notOn)) {
		t.Errorf("the browser: %+v; want the provider's login and consent pages, then the CLI's loopback listener saying signed in", l)
	}
}

// testDaemon is a daemon serving in this process.
type testDaemon struct {
	sock, state string
	log         *testenv.SyncBuffer
	rec         struct{ URL, Token string } // its daemon record's address and token (listen on)
}

// startDaemon serves cfg from dir until t's cleanup; listen is serve's
// --listen.
func startDaemon(t *testing.T, dir, cfg, listen string) *testDaemon {
	t.Helper()
	d := &testDaemon{sock: filepath.Join(dir, "mcpx.sock"), state: filepath.Join(dir, "state"), log: new(testenv.SyncBuffer)}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfg, "--socket", d.sock, "--state-dir", d.state, "--listen", listen},
			strings.NewReader(""), d.log, d.log)
	}()
	t.Cleanup(func() {
		stop()
		if code := <-served; code != exitOK {
			t.Errorf("serve exited %d:\n%s", code, d.log.String())
		}
	})
	testenv.WaitFor(t, "the daemon to answer", func() bool { return client.Answers(d.sock) })
	if listen != "off" {
		testenv.WaitFor(t, "the daemon record", func() bool {
			rec, err := client.ReadRecord(d.state)
			if err == nil {
				d.rec.URL, d.rec.Token = rec.URL, rec.Token
			}
			return d.rec.URL != ""
		})
	}
	return d
}

// signIn is what the daemon keeps of a sign-in (mcp/oauth's record).
type signIn struct {
	AccessToken, RefreshToken string
	Expiry                    time.Time
	TokenEndpoint             string
	Resource                  string
	Client                    struct{ ID, Secret, AuthMethod string }
}

func readSignIn(t *testing.T, state string) signIn {
	t.Helper()
	var s signIn
	b, err := os.ReadFile(filepath.Join(state, "oauth", "hosted.json"))
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil || s.AccessToken == "" {
		t.Fatalf("the daemon's sign-in to hosted: %v", err)
	}
	return s
}

// waitPast waits until the access token of expiry has expired: the one
// wait a token's lifetime asks for.
func waitPast(expiry time.Time) {
	time.Sleep(time.Until(expiry) + 100*time.Millisecond)
}

// refreshAt asks s's token endpoint for a refresh with s's refresh token,
// as s's client: the status and body.
func refreshAt(t *testing.T, s signIn) (int, string) {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {s.RefreshToken}, "resource": {s.Resource}}
	req, _ := http.NewRequest(http.MethodPost, s.TokenEndpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(s.Client.ID), url.QueryEscape(s.Client.Secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// callOverMCP calls tool on the daemon's /mcp over its socket, as the
// owner, with a go-sdk client: its text.
func callOverMCP(t *testing.T, sock, tool string) string {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	c := mcp.NewClient(&mcp.Implementation{Name: "oidc-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://mcpx/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("/mcp: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("/mcp: %s: %v %+v", tool, err, res)
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		t.Fatalf("/mcp: %s answered no text: %+v", tool, res.Content)
	}
	return tc.Text
}
