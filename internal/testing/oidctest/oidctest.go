// Package oidctest is a real OAuth provider with a real MCP resource
// server behind it, for acceptance tests of signing in (issue 33): the
// OpenID provider oidc-provider from testdata/npm (its own login and
// consent pages, dynamic client registration, resource indicators,
// opaque access tokens of a few seconds, refresh token rotation,
// introspection, revocation) and a resource server built with the
// TypeScript MCP SDK (its protected resource metadata and bearer-token
// middleware, asking the provider's introspection endpoint about every
// token), each a node process on loopback; and the $BROWSER that signs a
// person in through the provider's pages in headless Chromium
// (playwright-core). The programs are in testdata.
//
//	h := oidctest.Start(t, oidctest.Options{})
//	cfg := `{"servers": {"hosted": {"url": "` + h.MCPURL + `"}}}`
//	t.Setenv("BROWSER", h.Browser(t, "alice")) // `mcpx auth login hosted` signs in as alice
//	… h.Seen(t) is every request the resource server got, with the token's subject;
//	h.Grants(t) every token grant the provider answered; h.Revoke(t, "alice").
package oidctest

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// Options configure Start.
type Options struct {
	AccessTTL int      // the access tokens' lifetime in seconds; 0 = 5
	Accounts  []string // who may sign in; nil = alice
}

// Harness is a running provider and resource server.
type Harness struct {
	Issuer string // the provider (its discovery: Issuer/.well-known/openid-configuration)
	MCPURL string // the resource server's MCP endpoint

	dir, node, pw string
	ws            string // the file holding the browser's endpoint (browser.cjs)
	log           string // the sign-ins' Landing lines
}

// Start starts the provider, the resource server in front of it and the
// browser, at once; t's cleanup stops them. Call proctest.CheckNoLeaks(t)
// first.
func Start(t testing.TB, o Options) *Harness {
	t.Helper()
	node := testenv.Node(t)
	pw := filepath.Dir(testenv.NPMPackageBin(t, "playwright-core"))
	modules := filepath.Dir(pw)
	if err := checkPinned(filepath.Join(modules, "oidc-provider"), filepath.Join(filepath.Dir(modules), "package-lock.json")); err != nil {
		t.Fatalf("oidctest: %v (npm ci --prefix testdata/npm)", err)
	}
	tmp := t.TempDir()
	h := &Harness{dir: filepath.Join(testenv.RepoRoot(t), "internal", "testing", "oidctest", "testdata"), node: node, pw: pw,
		log: filepath.Join(tmp, "landings.jsonl"), ws: filepath.Join(tmp, "browser-endpoint")}
	if o.AccessTTL == 0 {
		o.AccessTTL = 5
	}
	if o.Accounts == nil {
		o.Accounts = []string{"alice"}
	}
	accounts, _ := json.Marshal(o.Accounts)
	env := []string{"NODE_MODULES=" + modules, "RS_SECRET=" + rand.Text(), proctest.Env(t)}
	provider := h.start(t, []string{"provider.mjs"}, "ISSUER", append(env, fmt.Sprintf("ACCESS_TTL=%d", o.AccessTTL), "ACCOUNTS="+string(accounts)))
	resource := h.start(t, []string{"resource.mjs"}, "MCP", env)
	browser := h.start(t, []string{"browser.cjs", pw, testenv.Chromium(t)}, "WS", env)
	h.Issuer = provider.wait(t)
	fmt.Fprintln(resource.stdin, h.Issuer)
	h.MCPURL = resource.wait(t)
	if err := os.WriteFile(h.ws, []byte(browser.wait(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// program is a node program of testdata, started.
type program struct {
	name   string
	stdin  io.Writer
	stderr *testenv.SyncBuffer
	got    chan string
}

// start runs args (a program of testdata and its arguments) with node;
// wait returns the word it prints after word. At t's cleanup its stdin
// is closed, then it gets SIGTERM, then SIGKILL.
func (h *Harness) start(t testing.TB, args []string, word string, env []string) *program {
	t.Helper()
	cmd := exec.Command(h.node, append([]string{filepath.Join(h.dir, args[0])}, args[1:]...)...)
	// The test's marker: the browser's processes too are the test's own,
	// and no other test's (proctest), whichever test checks for leaks.
	cmd.Env = append(append(os.Environ(), env...), proctest.Env(t))
	p := &program{name: args[0], stderr: new(testenv.SyncBuffer), got: make(chan string, 1)}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("oidctest: starting %s: %v", args[0], err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s's stderr:\n%s", args[0], p.stderr.String())
		}
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), word+" "); ok {
				p.got <- u
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	return p
}

func (p *program) wait(t testing.TB) string {
	t.Helper()
	select {
	case u := <-p.got:
		return u
	case <-time.After(60 * time.Second):
		t.Fatalf("oidctest: %s did not start:\n%s", p.name, p.stderr.String())
		return ""
	}
}

// checkPinned says whether the package in dir is the lockfile's version.
func checkPinned(dir, lockfile string) error {
	var pkg struct{ Version string }
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		return fmt.Errorf("oidc-provider is not installed: %w", err)
	}
	if b, err = os.ReadFile(lockfile); err == nil {
		err = json.Unmarshal(b, &lock)
	}
	if err != nil {
		return err
	}
	if want := lock.Packages["node_modules/oidc-provider"].Version; pkg.Version != want {
		return fmt.Errorf("oidc-provider is %s, the lockfile pins %q", pkg.Version, want)
	}
	return nil
}

// Browser returns a $BROWSER that signs in as account: node running
// signin.cjs, which opens the URL it is given in a new window of the
// harness's headless Chromium, fills
// the provider's login page, accepts its consent page and waits for the
// page the redirect lands on. Landings reads what it saw.
func (h *Harness) Browser(t testing.TB, account string) string {
	t.Helper()
	return strings.Join([]string{h.node, filepath.Join(h.dir, "signin.cjs"), h.pw, h.ws, account, h.log}, " ")
}

// Landing is one sign-in in the browser.
type Landing struct {
	Landed string   `json:"landed"` // the origin and path the redirect landed on (the CLI's listener)
	Text   string   `json:"text"`   // what that page said ("Signed in to …"), or "error: …"
	Pages  []string `json:"pages"`  // the provider's pages it went through: login, consent
}

// Landings returns the sign-ins the browsers made since the last call.
func (h *Harness) Landings(t testing.TB) []Landing {
	t.Helper()
	b, err := os.ReadFile(h.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	os.Remove(h.log)
	var out []Landing
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l Landing
		if line != "" && json.Unmarshal([]byte(line), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// Grant is a token request the provider answered.
type Grant struct {
	Type    string `json:"grant"` // authorization_code, refresh_token
	OK      bool   `json:"ok"`
	Error   string `json:"error"` // invalid_grant, …
	Client  string `json:"client"`
	Account string `json:"account"`
	Rotated bool   `json:"rotated"` // a refresh that replaced its refresh token
}

// Grants returns every token request the provider answered, in order.
func (h *Harness) Grants(t testing.TB) []Grant {
	var g []Grant
	h.get(t, h.Issuer+"/test/events", &g)
	return g
}

// Request is a request the resource server's /mcp got.
type Request struct {
	Method string `json:"method"`
	Status int    `json:"status"`
	Sub    string `json:"sub"`    // the token's subject ("" when it was refused)
	Client string `json:"client"` // the token's client
	Active bool   `json:"active"` // the provider said the token is active
	Token  string `json:"token"`  // the bearer token as sent ("" = none)
	// Message is the echo tool's message, when the request was that
	// call: which call it was ("" for every other request).
	Message string `json:"message"`
}

// Seen returns every request the resource server's /mcp got, in order.
func (h *Harness) Seen(t testing.TB) []Request {
	var r []Request
	h.get(t, strings.TrimSuffix(h.MCPURL, "/mcp")+"/test/seen", &r)
	return r
}

// Revoke revokes every grant account gave, as a person does at the
// provider's account page: its tokens stop working at once. It returns
// how many grants there were.
func (h *Harness) Revoke(t testing.TB, account string) int {
	t.Helper()
	resp, err := http.Post(h.Issuer+"/test/revoke?account="+url.QueryEscape(account), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Revoked int }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Revoked
}

func (h *Harness) get(t testing.TB, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}
