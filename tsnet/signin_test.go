package tsnet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/oidctest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// TestTailnetCallersSignInForThemselves: two people on two tailnet
// machines, each granted the perCaller server hosted (oidc-provider in
// front of a TS SDK resource server, internal/testing/oidctest), each
// sign in for themselves (docs/oauth.md, "Per-caller sign-in"): before,
// each call is authorization-required; each signs in through the
// provider's own login and consent pages in headless Chromium as a
// provider account of their own; then the resource server sees every
// call of each with that person's own token, never the other's (the
// tailnet callers send no credential of their own to pass on); each sees
// only their own sign-in; one signing out leaves the other signed in.
func TestTailnetCallersSignInForThemselves(t *testing.T) {
	proctest.CheckNoLeaks(t)
	began := time.Now()
	// Tokens of a minute: what this test checks is whose token, not its refresh.
	h := oidctest.Start(t, oidctest.Options{Accounts: []string{"alice", "bob"}, AccessTTL: 60})
	t.Logf("%v: the provider, the resource server and the browser serve", time.Since(began))
	tn := newTailnet(t)
	cfg, err := config.Parse([]byte(`{"servers": {"hosted": {"url": "`+h.MCPURL+`", "oauth": {"perCaller": true}}}}`), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	serveBroker(t, tn.node(t, "broker", nil), cfg, nil, t.TempDir())
	people := []*person{{account: "alice", peer: newPeer(t, tn.node(t, "alice", nil))}, {account: "bob", peer: newPeer(t, tn.node(t, "bob", nil))}}
	tn.control.SetGlobalAppCaps(grant(`{"servers": ["hosted"]}`)) // both people's grant
	for _, p := range people {
		testenv.WaitFor(t, "the grant to reach the broker", func() bool {
			code, _ := p.do(t, "GET", "/v1/whoami", "")
			return code == 200
		})
		p.login = p.whoami(t).Caller.Name
	}
	if people[0].login == people[1].login || !strings.Contains(people[0].login, "@") {
		t.Fatalf("the two machines' logins: %q, %q; want two people", people[0].login, people[1].login)
	}
	t.Logf("%v: three tailnet nodes up, %s and %s granted", time.Since(began), people[0].login, people[1].login)

	for _, p := range people {
		if code, body := p.echo(t, "early"); code != http.StatusForbidden || !strings.Contains(body, wire.KindAuthRequired) || !strings.Contains(body, "perCaller") {
			t.Fatalf("%s's call before signing in: %d %s, want authorization-required for them", p.account, code, body)
		}
	}
	for _, p := range people {
		p.signIn(t, h)
	}
	t.Logf("%v: both signed in", time.Since(began))
	if ls := h.Landings(t); len(ls) != 2 || strings.Join(ls[0].Pages, ",") != "login,consent" || strings.Join(ls[1].Pages, ",") != "login,consent" {
		t.Errorf("the browser's sign-ins: %+v, want two, each through the login and consent pages", ls)
	}
	if g := codeGrants(h.Grants(t)); g != "alice,bob" {
		t.Errorf("the provider's authorization_code grants: %s, want one for alice, one for bob", g)
	}

	rt, _ := wire.Lookup(wire.OpCallTool)
	for round := range 2 {
		for _, p := range people {
			if code, body := p.do(t, "POST", rt.Path("hosted", "whoami"), "{}"); code != 200 || !strings.Contains(body, `"text":"`+p.account+`"`) {
				t.Errorf("%s's whoami at the resource server: %d %s, want %s", p.login, code, body, p.account)
			}
			if code, body := p.echo(t, fmt.Sprintf("from-%s-%d", p.account, round)); code != 200 {
				t.Errorf("%s's call: %d %s", p.login, code, body)
			}
		}
	}
	checkSeen(t, h.Seen(t), map[string]int{"alice": 2, "bob": 2})

	// Each sees their own sign-in alone.
	srt, _ := wire.Lookup(wire.OpAuthStatus)
	for _, p := range people {
		code, body := p.do(t, "GET", srt.Path(), "")
		var l wire.AuthStatusList
		json.Unmarshal([]byte(body), &l) //nolint:errcheck // checked below
		if code != 200 || len(l.Servers) != 1 || l.Servers[0].Caller != "@tailnet:"+p.login || !l.Servers[0].SignedIn {
			t.Errorf("%s's auth status: %d %s, want their own sign-in alone", p.login, code, body)
		}
	}

	// Alice signs out; bob stays signed in.
	lort, _ := wire.Lookup(wire.OpAuthLogout)
	if code, body := people[0].do(t, "DELETE", lort.Path("hosted"), ""); code != 200 {
		t.Fatalf("alice signs out: %d %s", code, body)
	}
	if code, body := people[0].echo(t, "late"); code != http.StatusForbidden || !strings.Contains(body, wire.KindAuthRequired) {
		t.Errorf("alice's call after signing out: %d %s, want authorization-required", code, body)
	}
	if code, body := people[1].echo(t, "from-bob-after"); code != 200 {
		t.Errorf("bob's call after alice signed out: %d %s", code, body)
	}
	checkSeen(t, h.Seen(t), map[string]int{"alice": 2, "bob": 3})
	t.Logf("%v: done", time.Since(began))
}

// person is someone at a tailnet machine: their provider account, their
// machine's peer and the tailnet login WhoIs names them by.
type person struct {
	account, login string
	peer
}

func (p *person) echo(t *testing.T, msg string) (int, string) {
	t.Helper()
	rt, _ := wire.Lookup(wire.OpCallTool)
	code, body := p.peer.do(t, "POST", rt.Path("hosted", "echo"), `{"message":"`+msg+`"}`)
	return code, string(body)
}

func (p *person) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	code, b := p.peer.do(t, method, path, body)
	return code, string(b)
}

// signIn is `mcpx auth login hosted` on p's machine: a loopback listener
// for the browser's redirect, the sign-in begun at the broker over the
// tailnet, the harness's browser signing in at the provider as p's
// account, and the code it brings back handed to the broker.
func (p *person) signIn(t *testing.T, h *oidctest.Harness) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	crt, _ := wire.Lookup(wire.OpAuthCallback)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		body, _ := json.Marshal(wire.AuthCallback{State: q.Get("state"), Code: q.Get("code"), Iss: q.Get("iss")})
		code, answer, err := p.try(r.Context(), "POST", crt.Path("hosted"), string(body))
		if err != nil || code != 200 {
			http.Error(w, fmt.Sprintf("failed: %d %s %v", code, html.EscapeString(string(answer)), err), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "Signed in to hosted")
	})}
	go srv.Serve(ln) //nolint:errcheck // ends with Close below
	defer srv.Close()
	lrt, _ := wire.Lookup(wire.OpAuthLogin)
	code, body := p.do(t, "POST", lrt.Path("hosted"), `{"redirectUri": "http://`+ln.Addr().String()+`/callback"}`)
	if code != 200 {
		t.Fatalf("%s begins signing in: %d %s", p.login, code, body)
	}
	var l wire.AuthLogin
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	argv := append(strings.Fields(h.Browser(t, p.account)), l.AuthorizationURL)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), proctest.Env(t))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s signs in as %s in the browser: %v\n%s\nthe browser saw: %+v", p.login, p.account, err, out, h.Landings(t))
	}
}

// try is do for a goroutine that is not the test's: the error, not a
// failure.
func (p peer) try(ctx context.Context, method, path, body string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://broker.tail-scale.ts.net"+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set(wire.HeaderClient, "tailnet-test")
	resp, err := p.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// codeGrants are the accounts the provider's successful authorization_code
// grants were for, in order.
func codeGrants(gs []oidctest.Grant) string {
	var out []string
	for _, g := range gs {
		if g.Type == "authorization_code" && g.OK {
			out = append(out, g.Account)
		}
	}
	return strings.Join(out, ",")
}

// checkSeen checks the resource server's record: every echo call from
// account ("from-<account>-…") came with a token of account's, as many as
// want says; no token served two accounts; every token sent was one the
// provider issued and holds live (never a credential of the caller's own).
func checkSeen(t *testing.T, seen []oidctest.Request, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	owner := map[string]string{} // token -> the subject it spoke for
	for _, r := range seen {
		if r.Token != "" && !r.Active {
			t.Errorf("a token the provider does not hold live reached the resource server (%s, status %d)", r.Method, r.Status)
		}
		if r.Token != "" && r.Sub != "" {
			if o, ok := owner[r.Token]; ok && o != r.Sub {
				t.Errorf("one token spoke for %s and %s at the resource server", o, r.Sub)
			}
			owner[r.Token] = r.Sub
		}
		account, ok := strings.CutPrefix(r.Message, "from-")
		if !ok {
			continue
		}
		account, _, _ = strings.Cut(account, "-")
		got[account]++
		if r.Status != 200 || r.Sub != account {
			t.Errorf("%s's call %q reached the resource server as %q (status %d), want with %s's own token", account, r.Message, r.Sub, r.Status, account)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the calls the resource server saw, by account: %v, want %v", got, want)
	}
}
