package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// TestTokenDiesWithItsTailnetMintersGrant (real-use 22): a token minted by
// a tailnet admin names its minter in GET /v1/tokens, and stops working
// once the minter is seen with its grant taken away, even after the grant
// comes back; a subject named like a built-in caller is refused.
func TestTokenDiesWithItsTailnetMintersGrant(t *testing.T) {
	is, err := auth.Open(auth.Options{Dir: t.TempDir(), Hostname: "box"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	grant := rights.Rights{{Servers: []string{"*"}, Admin: true}}
	url := serveIdentifiedTokens(t, func(r *http.Request) (broker.Caller, error) {
		mu.Lock()
		defer mu.Unlock()
		c := broker.Caller{Name: "admin@example.com", Via: wire.ViaTailnet, Rights: grant}
		if len(grant) == 0 {
			return c, &broker.Error{Kind: broker.KindForbidden, Op: "authenticate", Msg: "no grant"}
		}
		return c, nil
	}, is)
	setGrant := func(g rights.Rights) { mu.Lock(); grant = g; mu.Unlock() }

	post := func(body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", url+"/v1/tokens", strings.NewReader(body))
		req.Header.Set(wire.HeaderClient, "api-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b json.RawMessage
		json.NewDecoder(resp.Body).Decode(&b)
		return resp.StatusCode, b
	}
	code, body := post(`{"sub":"loopback","servers":["*"]}`)
	if code != 400 || !strings.Contains(string(body), "reserved") {
		t.Errorf("minting for subject loopback: %d %s, want 400 reserved", code, body)
	}
	code, body = post(`{"sub":"ci","servers":["*"],"ttl":"1h"}`)
	if code != 200 {
		t.Fatalf("mint: %d %s", code, body)
	}
	var m wire.MintedToken
	json.Unmarshal(body, &m)
	if mi := m.Info.Minter; mi == nil || mi.Name != "admin@example.com" || mi.Via != wire.ViaTailnet || mi.Owner {
		t.Errorf("minted token's minter = %+v", mi)
	}
	var l wire.TokenList
	_, lb := get(t, url+"/v1/tokens")
	json.Unmarshal(lb, &l)
	if len(l.Tokens) != 1 || l.Tokens[0].Minter == nil || l.Tokens[0].Minter.Name != "admin@example.com" {
		t.Errorf("GET /v1/tokens: %s, want the minter named", lb)
	}
	auth := "Bearer " + m.Token
	if code, b := get(t, url+"/v1/whoami", "Authorization", auth); code != 200 {
		t.Fatalf("the token, its minter an admin: %d %s", code, b)
	}
	setGrant(nil)
	get(t, url+"/v1/whoami") // the minter calls, without its grant
	setGrant(rights.Rights{{Servers: []string{"*"}, Admin: true}})
	if code, b := get(t, url+"/v1/whoami", "Authorization", auth); code != http.StatusUnauthorized || !strings.Contains(string(b), "revoked") {
		t.Errorf("the token after its minter lost its grant: %d %s, want 401 revoked", code, b)
	}
}
