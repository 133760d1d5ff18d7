package api_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

// TestPublicSignInApprovedByTheOwner: a client registers on the public
// face (DCR), its authorization page shows a code, the owner approves it
// over the unix socket narrowed to one server (loopback TCP, even with the
// daemon's token, may not), the browser comes back with a code, the
// client exchanges it with its PKCE verifier, then lists and calls that
// server's tools only, refreshes, and fails cleanly once it revoked its
// token.
func TestPublicSignInApprovedByTheOwner(t *testing.T) {
	t.Parallel()
	p := startPublic(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path, ctype, body string) (*http.Response, string) {
		req, _ := http.NewRequestWithContext(t.Context(), method, p.base+path, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	const redirect = "http://127.0.0.1:33418/callback"
	resp, body := send("POST", "/register", "application/json", `{"client_name":"Flow Test","redirect_uris":["`+redirect+`"]}`)
	var reg struct {
		ID string `json:"client_id"`
	}
	if json.Unmarshal([]byte(body), &reg); resp.StatusCode != 201 || reg.ID == "" {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	verifier := strings.Repeat("v3rifier-", 6)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ID}, "redirect_uri": {redirect}, "state": {"s1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {publicOrigin + "/mcp"}}
	resp, page := send("GET", "/authorize?"+q.Encode(), "", "")
	code := regexp.MustCompile(`id="code">([A-Z]{4}-[A-Z]{4})<`).FindStringSubmatch(page)
	wait := regexp.MustCompile(`url=(/authorize/wait\?id=[^"]+)"`).FindStringSubmatch(page)
	if resp.StatusCode != 200 || code == nil || wait == nil {
		t.Fatalf("authorize: %d %s", resp.StatusCode, page)
	}
	approve := `{"code":"` + code[1] + `","servers":["demo"]}`
	if r := p.TCP.Do(t, "POST", "/v1/public/approve", approve); r.StatusCode != http.StatusForbidden {
		t.Fatalf("approving over loopback TCP: %d %s, want 403", r.StatusCode, r.Bytes)
	}
	r := p.Unix.Do(t, "POST", "/v1/public/approve", approve)
	var ap wire.PublicApproved
	if r.StatusCode != 200 {
		t.Fatalf("approve: %d %s", r.StatusCode, r.Bytes)
	}
	r.Decode(t, &ap)
	if ap.ClientName != "Flow Test" || ap.RedirectHost != "127.0.0.1:33418" || ap.Resource != publicOrigin+"/mcp" {
		t.Fatalf("approved: %+v", ap)
	}
	resp, _ = send("GET", strings.ReplaceAll(wait[1], "&amp;", "&"), "", "")
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Query().Get("iss") != publicOrigin || loc.Query().Get("state") != "s1" {
		t.Fatalf("back to the client: %d %s", resp.StatusCode, loc)
	}
	token := func(form url.Values) map[string]any {
		t.Helper()
		resp, body := send("POST", "/token", "application/x-www-form-urlencoded", form.Encode())
		var m map[string]any
		if json.Unmarshal([]byte(body), &m); resp.StatusCode != 200 {
			t.Fatalf("token: %d %s", resp.StatusCode, body)
		}
		return m
	}
	tok := token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "client_id": {reg.ID},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {publicOrigin + "/mcp"}})

	connect := func(at string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "flow", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: p.base + "/mcp", HTTPClient: &http.Client{Transport: apitest.Bearer{Token: at}}, MaxRetries: -1}
		return c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}
	cs, err := connect(tok["access_token"].(string))
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if !strings.HasPrefix(tl.Name, "demo__") {
			t.Errorf("tool %s listed; the owner approved demo only", tl.Name)
		}
	}
	if got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "demo__echo", Arguments: map[string]any{"message": "approved"}}); got != "approved" {
		t.Fatalf("echo: %q", got)
	}
	cs.Close()
	tok2 := token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {reg.ID}})
	at2 := tok2["access_token"].(string)
	if cs, err = connect(at2); err != nil {
		t.Fatalf("after refreshing: %v", err)
	}
	cs.Close()
	if resp, _ := send("POST", "/revoke", "application/x-www-form-urlencoded", url.Values{"token": {at2}}.Encode()); resp.StatusCode != 200 {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	if _, err := connect(at2); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Fatalf("after revocation the client connected, or failed otherwise: %v", err)
	}
}
