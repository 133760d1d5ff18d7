package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

// TestPublicClientsListAndRevoke: the owner lists the public face's OAuth
// clients with their live tokens, and revokes one sign-in by a token's id
// (its access token is refused at its next call, its refresh token
// invalid_grant, the client's other sign-in untouched), then the whole
// client by its id (every token and its registration). An admin who is
// not the owner may do neither.
func TestPublicClientsListAndRevoke(t *testing.T) {
	t.Parallel()
	p := startPublic(t)
	c, s1, s2 := p.twoSignIns(t)
	at1, rt1, tok1 := s1.access, s1.refresh, s1.tok
	at2, rt2 := s2.access, s2.refresh

	var list wire.PublicClients
	p.Unix.Do(t, "GET", "/v1/public/clients", "").Decode(t, &list)
	if len(list.Clients) != 1 {
		t.Fatalf("clients = %+v", list.Clients)
	}
	got := list.Clients[0]
	if got.ID != c.ID || got.Name != "Claude" || got.Registration != "dcr" || strings.Join(got.RedirectHosts, ",") != "claude.ai" ||
		len(got.Tokens) != 2 || got.SignIns != 2 || !slices.ContainsFunc(got.Tokens, func(tok wire.PublicToken) bool { return tok.ID == tok1.ID && tok.Approver == "owner" }) {
		t.Errorf("the client as listed: %+v", got)
	}
	if strings.Contains(string(p.Unix.Do(t, "GET", "/v1/public/clients", "").Bytes), at1) {
		t.Error("the listing holds a token's secret")
	}
	admin := apitest.Mint(t, p.Unix, wire.TokenRequest{Subject: "ops", Rule: rights.Rule{Admin: true}, TTL: "1h"})
	as := []string{"Authorization", "Bearer " + admin.Token, wire.HeaderClient, "test", "Content-Type", "application/json"}
	for _, r := range []*apitest.Response{
		p.TCP.Do(t, "GET", "/v1/public/clients", "", as...),
		p.TCP.Do(t, "POST", "/v1/public/revoke", `{"id":"`+c.ID+`"}`, as...),
	} {
		if r.StatusCode != http.StatusForbidden {
			t.Errorf("an admin who is not the owner: %d %s, want 403", r.StatusCode, r.Bytes)
		}
	}

	var rv wire.PublicRevoked
	p.Unix.Do(t, "POST", "/v1/public/revoke", `{"id":"`+tok1.ID+`"}`).Decode(t, &rv)
	if rv.Token != tok1.ID || rv.Client != c.ID || rv.Tokens != 2 {
		t.Errorf("revoking a token: %+v, want its access and refresh token", rv)
	}
	p.checkSignedOut(t, "the revoked sign-in", at1, rt1, c.ID)
	if r := p.mcpInit(t, "/mcp", at2); r.StatusCode != http.StatusOK {
		t.Fatalf("the client's other sign-in: %d %s", r.StatusCode, r.Bytes)
	}

	rv = wire.PublicRevoked{}
	p.Unix.Do(t, "POST", "/v1/public/revoke", `{"id":"`+c.ID+`"}`).Decode(t, &rv)
	if rv.Token != "" || rv.Client != c.ID || rv.Tokens != 2 {
		t.Errorf("revoking the client: %+v", rv)
	}
	p.checkSignedOut(t, "the revoked client", at2, rt2, c.ID)
	if _, ok := p.tokens.Client(c.ID); ok {
		t.Error("the revoked client is still registered")
	}
	if r := p.Unix.Do(t, "POST", "/v1/public/revoke", `{"id":"`+c.ID+`"}`); r.StatusCode != http.StatusNotFound || r.Problem(t).Field != "id" {
		t.Errorf("revoking it again: %d %s, want 404 naming the id", r.StatusCode, r.Bytes)
	}
	p.Unix.Do(t, "GET", "/v1/public/clients", "").Decode(t, &list)
	if len(list.Clients) != 0 {
		t.Errorf("after revoking the client: %+v", list.Clients)
	}
}

// checkSignedOut: the access token is refused at its next call and its
// refresh token at the token endpoint.
func (p *publicDaemon) checkSignedOut(t *testing.T, what, at, rt, client string) {
	t.Helper()
	if r := p.mcpInit(t, "/mcp", at); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("%s's access token: %d %s, want 401", what, r.StatusCode, r.Bytes)
	}
	r := p.do(t, "POST", public.TokenPath, "grant_type=refresh_token&refresh_token="+rt+"&client_id="+client,
		"Content-Type", "application/x-www-form-urlencoded")
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Bytes), "invalid_grant") {
		t.Errorf("%s's refresh: %d %s, want invalid_grant", what, r.StatusCode, r.Bytes)
	}
}

// tokenPair is one sign-in's tokens.
type tokenPair struct {
	access, refresh string
	tok             access.Token
}

// twoSignIns registers the client "Claude" on p's face and gives it two
// sign-ins of the owner's for the demo server.
func (p *publicDaemon) twoSignIns(t *testing.T) (access.Client, tokenPair, tokenPair) {
	t.Helper()
	c, err := p.tokens.Register("Claude", []string{"https://claude.ai/api/mcp/auth_callback"})
	if err != nil {
		t.Fatal(err)
	}
	g := access.Grant{Client: c.ID, ClientName: c.Name, Resource: publicOrigin + "/mcp", Scopes: []string{public.Scope},
		Rights: rights.Rights{{Servers: []string{"demo"}}}, Approver: "owner"}
	var out [2]tokenPair
	for i := range out {
		if out[i].access, out[i].refresh, out[i].tok, err = p.tokens.IssuePair(g, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	return c, out[0], out[1]
}
