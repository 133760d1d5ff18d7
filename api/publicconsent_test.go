package api_test

import (
	"net/http"
	"strings"
	"testing"

	"mcpx.dev/mcpx/api/public"
)

// TestConsentPageOnTheTailnetOnly: the tailnet consent page answers no one
// off the tailnet: 404 on the unix socket and the public listener, 403 on
// loopback TCP (with the daemon's token, which makes its bearer the owner,
// but no tailnet identity), each framed by nobody and naming no consent
// id. The tailnet itself is tsnet's TestPublicConsentOnTheTailnet.
func TestConsentPageOnTheTailnetOnly(t *testing.T) {
	t.Parallel()
	p := startPublic(t)
	path := public.ConsentPath + "?id=secret-consent-id"
	for _, c := range []struct {
		name   string
		status int
		do     func() (int, http.Header, string)
	}{
		{"the unix socket", http.StatusNotFound, func() (int, http.Header, string) {
			r := p.Unix.Do(t, "GET", path, "")
			return r.StatusCode, r.Header, string(r.Bytes)
		}},
		{"loopback TCP", http.StatusForbidden, func() (int, http.Header, string) {
			r := p.TCP.Do(t, "GET", path, "")
			return r.StatusCode, r.Header, string(r.Bytes)
		}},
		{"loopback TCP, the form", http.StatusForbidden, func() (int, http.Header, string) {
			r := p.TCP.Do(t, "POST", public.ConsentPath, "id=x&csrf=y&server=demo", "Content-Type", "application/x-www-form-urlencoded")
			return r.StatusCode, r.Header, string(r.Bytes)
		}},
		{"the public listener", http.StatusNotFound, func() (int, http.Header, string) {
			r := p.do(t, "GET", path, "")
			return r.StatusCode, r.Header, string(r.Bytes)
		}},
	} {
		status, h, body := c.do()
		if status != c.status || strings.Contains(body, "secret-consent-id") || strings.Contains(body, `name="csrf"`) {
			t.Errorf("%s: %d %s, want %d naming nothing", c.name, status, body, c.status)
		}
		if c.name != "the public listener" && !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s: the answer may be framed (CSP %q)", c.name, h.Get("Content-Security-Policy"))
		}
	}
}
