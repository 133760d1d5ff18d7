package api_test

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// TestUnusableServerIsNotFound: to a caller whose rights do not name a
// server, that server does not exist. Every route that names a server
// answers it exactly as for a name that is not configured — the same 404
// and the same problem apart from the name — so no token or tailnet caller
// can probe which servers exist (a tool call used to answer 403 "this
// caller may not use this server"). A server it may use, from a cwd
// outside its roots, stays a 403: that is about where, not whether.
func TestUnusableServerIsNotFound(t *testing.T) {
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`, "secret": `{"scope": "global"}`}), Tokens: is})
	root, _ := filepath.EvalSymlinks(t.TempDir())
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	m := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "ci", Rule: rights.Rule{Servers: []string{"demo"}, Roots: []string{root}}})
	ci := bearerClient(d, m.Token)

	before := scrapeMetrics(t, d.TCP)
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/servers/%s", ""},
		{"GET", "/v1/servers/%s/tools", ""},
		{"GET", "/v1/servers/%s/resources", ""},
		{"GET", "/v1/servers/%s/prompts", ""},
		{"POST", "/v1/servers/%s/tools/echo", `{"message":"hi"}`},
		{"GET", "/v1/servers/%s/resources/read?uri=" + url.QueryEscape("demo://x"), ""},
		{"POST", "/v1/servers/%s/prompts/greet", `{}`},
		{"GET", "/v1/servers/%s/openapi.json", ""},
		{"GET", "/v1/types?server=%s", ""},
		{"GET", "/v1/clients/typescript?servers=%s", ""},
	}
	for _, rt := range routes {
		answer := func(server string) (int, string) {
			r := ci.Do(t, rt.method, strings.Replace(rt.path, "%s", server, 1), rt.body, cwdHeader(root)...)
			return r.StatusCode, string(r.Bytes)
		}
		secretCode, secret := answer("secret")
		noneCode, none := answer("nosuch")
		if noneCode != 404 || secretCode != noneCode || strings.ReplaceAll(secret, "secret", "nosuch") != none {
			t.Errorf("%s %s: a server the caller may not use answers %d %s; one that does not exist %d %s; want the same 404",
				rt.method, rt.path, secretCode, secret, noneCode, none)
		}
		if strings.Contains(none, "secret") {
			t.Errorf("%s %s: the not-found problem names the server the caller may not use: %s", rt.method, rt.path, none)
		}
	}
	// The same through the streamed call: refused before the stream starts.
	r := ci.Do(t, "POST", "/v1/servers/secret/tools/echo", `{}`, append(cwdHeader(root), "Accept", wire.MediaEventStream)...)
	if r.StatusCode != 404 {
		t.Errorf("streamed call of a server the caller may not use: %d %s, want 404", r.StatusCode, r.Bytes)
	}

	// To the owner's metrics each is a refusal by the caller's rights (and
	// a name that does not exist is not).
	after := scrapeMetrics(t, d.TCP)
	if got := after.value("mcpx_auth_denials_total", "reason", "rights") - before.value("mcpx_auth_denials_total", "reason", "rights"); got != float64(len(routes)+1) {
		t.Errorf("rights denials moved by %v, want %d (one per request naming the server the caller may not use)", got, len(routes)+1)
	}

	r = ci.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`, cwdHeader(outside)...)
	if p := r.Problem(t); p.Status != 403 || !strings.Contains(p.Detail, "outside the roots") || !strings.Contains(p.Detail, "may use demo under "+root) {
		t.Errorf("demo from a cwd outside its roots: %+v, want a 403 naming the roots demo may be used under", p)
	}
	if got := ci.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`, cwdHeader(root)...).Result(t).Text(); got != "hi" {
		t.Errorf("demo in its root: %q", got)
	}
}
