package api_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/auth/owner"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

// oauthProbes are what an MCP client asks for when it looks for OAuth
// (RFC 9728 and RFC 8414 with and without the endpoint's path, OpenID
// Connect discovery in both forms, dynamic client registration and the
// default endpoints a client falls back to).
var oauthProbes = []struct{ method, path string }{
	{"GET", "/.well-known/oauth-protected-resource"},
	{"GET", "/.well-known/oauth-protected-resource/mcp"},
	{"GET", "/.well-known/oauth-protected-resource/mcp/demo"},
	{"GET", "/.well-known/oauth-authorization-server"},
	{"GET", "/.well-known/oauth-authorization-server/mcp"},
	{"GET", "/.well-known/openid-configuration"},
	{"GET", "/.well-known/openid-configuration/mcp"},
	{"GET", "/mcp/.well-known/openid-configuration"},
	{"GET", "/.well-known/jwks.json"},
	{"POST", "/register"},
	{"GET", "/authorize"},
	{"POST", "/token"},
}

// noTailnetGrant refuses as the tailnet node does a peer without a grant.
func noTailnetGrant(*http.Request) (broker.Caller, error) {
	return broker.Caller{}, &broker.Error{Kind: broker.KindForbidden, Op: "authenticate",
		Msg:  "laptop.example.ts.net has no tailnet grant of mcpx.dev/cap/broker to this broker",
		Hint: "ask the tailnet admin to grant mcpx.dev/cap/broker to this node"}
}

// TestFacesNeverTripClients (issue 34): on every listener — the unix
// socket, loopback TCP with and without a token, a tailnet-like listener
// whose caller has no grant — OAuth's discovery and registration paths are
// plain 404 problems, never a 200 or {}, with no challenge; a caller
// without a grant gets a 403 that says so (a JSON-RPC error on /mcp), and
// no 401 anywhere carries a Bearer challenge.
func TestFacesNeverTripClients(t *testing.T) {
	t.Parallel()
	d := apitest.Start(t, apitest.Options{})
	tailnet := serveIdentified(t, noTailnetGrant)
	bare := &apitest.Client{Base: "http://" + d.TCPAddr, HTTP: &http.Client{}}
	listeners := []struct {
		name string
		c    *apitest.Client
	}{
		{"unix", d.Unix},
		{"tcp with the token", d.TCP},
		{"tcp without a token", bare},
		{"tailnet without a grant", &apitest.Client{Base: tailnet, HTTP: &http.Client{}}},
	}
	for _, l := range listeners {
		for _, p := range oauthProbes {
			r := l.c.Do(t, p.method, p.path, "")
			if r.StatusCode != http.StatusNotFound || r.Header.Get("WWW-Authenticate") != "" {
				t.Errorf("%s: %s %s: %d (WWW-Authenticate %q) %s, want a 404 with no challenge", l.name, p.method, p.path, r.StatusCode, r.Header.Get("WWW-Authenticate"), r.Bytes)
				continue
			}
			if pr := r.Problem(t); pr.Kind() != wire.KindNotFound || !strings.Contains(pr.Detail, "OAuth") {
				t.Errorf("%s: %s %s: %+v, want a not-found problem saying mcpx does not use OAuth", l.name, p.method, p.path, pr)
			}
		}
	}

	// No grant on the tailnet: 403, saying what is missing; on /mcp as a
	// JSON-RPC error.
	r := (&apitest.Client{Base: tailnet, HTTP: &http.Client{}}).Do(t, "POST", "/mcp",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	var rpc struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if r.StatusCode != http.StatusForbidden || json.Unmarshal(r.Bytes, &rpc) != nil || rpc.Error.Code == 0 ||
		!strings.Contains(rpc.Error.Message, "no tailnet grant of mcpx.dev/cap/broker") || r.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("/mcp without a grant: %d %q %s, want a 403 JSON-RPC error naming the grant, no challenge", r.StatusCode, r.Header.Get("WWW-Authenticate"), r.Bytes)
	}
	code, body := get(t, tailnet+"/v1/servers")
	if code != http.StatusForbidden || !strings.Contains(string(body), "no tailnet grant") {
		t.Errorf("REST without a grant: %d %s, want a 403 problem naming the grant", code, body)
	}

	// A 401 on the tailnet (a token it does not take) has no challenge; on
	// loopback TCP its challenge is not Bearer.
	for _, tok := range []string{"a.b.c", owner.Prefix + "x", apitest.Token} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", tailnet+"/mcp", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("tailnet, token %.8s…: %d WWW-Authenticate %q, want 401 with none", tok, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	r = bare.Do(t, "POST", "/mcp", `{}`, "Content-Type", "application/json")
	if ch := r.Header.Get("WWW-Authenticate"); r.StatusCode != http.StatusUnauthorized || ch != `Mcpx realm="mcpx"` {
		t.Errorf("loopback /mcp without a token: %d WWW-Authenticate %q, want 401 with the Mcpx scheme", r.StatusCode, ch)
	}
}

// TestOwnerTokens: an owner token admits its bearer on loopback TCP as the
// owner, on the REST API and /mcp, from the moment it is added to the one
// it is revoked; revoked or unknown, it is a 401 that says how to get one,
// naming no token.
func TestOwnerTokens(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "auth")
	d := apitest.Start(t, apitest.Options{API: func(o *api.Options) { o.OwnerTokens = owner.Open(dir) }})
	cli := owner.Open(dir) // the CLI's, beside the daemon's
	secret, _, err := cli.Add("claude")
	if err != nil {
		t.Fatal(err)
	}
	bare := &apitest.Client{Base: "http://" + d.TCPAddr, HTTP: &http.Client{}}
	var w wire.Whoami
	r := bare.Do(t, "GET", "/v1/whoami", "", "Authorization", "Bearer "+secret, wire.HeaderClient, "t")
	if r.StatusCode != 200 {
		t.Fatalf("whoami with an owner token: %d %s", r.StatusCode, r.Bytes)
	}
	r.Decode(t, &w)
	if w.Caller.Name != "loopback:claude" || !w.Caller.Owner || w.Caller.Via != wire.ViaTCPLoopback {
		t.Errorf("whoami: %+v, want the owner as loopback:claude", w.Caller)
	}
	_, cs := d.ConnectMCPAs(t, apitest.Bearer{Token: secret}, "/mcp", "2025-11-25", nil)
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Errorf("/mcp with an owner token: %v", err)
	}
	if l, _ := cli.List(); len(l) != 1 || l[0].LastUsed.IsZero() {
		t.Errorf("list after use: %+v", l)
	}

	if _, err := cli.Revoke("claude"); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{secret, owner.Prefix + "unknown"} {
		r := bare.Do(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			"Authorization", "Bearer "+tok, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
		if r.StatusCode != http.StatusUnauthorized || !strings.Contains(string(r.Bytes), "--http` again") ||
			!strings.Contains(string(r.Bytes), `"jsonrpc"`) || strings.Contains(string(r.Bytes), tok) {
			t.Errorf("/mcp with a revoked or unknown owner token: %d %s, want a 401 JSON-RPC error saying how to fix it", r.StatusCode, r.Bytes)
		}
		p := bare.Do(t, "GET", "/v1/whoami", "", "Authorization", "Bearer "+tok, wire.HeaderClient, "t").Problem(t)
		if p.Status != 401 || !strings.Contains(p.Detail, "mcpx token add") {
			t.Errorf("REST with a revoked or unknown owner token: %+v", p)
		}
	}
}
