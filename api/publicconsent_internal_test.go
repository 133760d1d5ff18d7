package api

import (
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// TestConsentApprovalWithinGrant: the consent form's choice is the
// approver's grant narrowed, never wider: a grant that limits tools and
// rate passes its limits on; a server, a root or "anywhere" outside the
// grant is refused naming it; no server chosen is refused; the approval
// names the approver and their machine's address.
func TestConsentApprovalWithinGrant(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rate := rights.Rate{Count: 10, Per: time.Minute}
	c := broker.Caller{Name: "alice@example.com", Via: wire.ViaTailnet,
		Rights: rights.Rights{{Servers: []string{"demo"}, Roots: []string{root}, Tools: []string{"demo.echo"}, Rate: rate}}}
	a, err := consentApproval(c, "100.64.0.9:41641", url.Values{"server": {"demo"}, "roots": {root}, "ttl": {"1h"}})
	if err != nil {
		t.Fatal(err)
	}
	r := a.Rights[0]
	if len(a.Rights) != 1 || !slices.Equal(r.Servers, []string{"demo"}) || !slices.Equal(r.Tools, []string{"demo.echo"}) || r.Rate != rate ||
		a.Approver != c.Name || a.Node != "100.64.0.9" || a.TTL != time.Hour {
		t.Errorf("approval %+v, rule %+v", a, r)
	}
	for _, p := range []struct {
		name string
		form url.Values
		want string
	}{
		{"a server outside the grant", url.Values{"server": {"demo", "other"}, "roots": {root}}, "servers other is outside your tailnet grant"},
		{"a root outside the grant", url.Values{"server": {"demo"}, "roots": {"/"}}, "outside your tailnet grant"},
		{"anywhere, from a grant with roots", url.Values{"server": {"demo"}}, "outside your tailnet grant"},
		{"no server", url.Values{"roots": {root}}, "at least one server"},
		{"a lifetime too long", url.Values{"server": {"demo"}, "roots": {root}, "ttl": {"9999h"}}, "ttl"},
	} {
		if _, err := consentApproval(c, "100.64.0.9:41641", p.form); err == nil || !strings.Contains(err.Error(), p.want) {
			t.Errorf("%s: %v, want refused saying %q", p.name, err, p.want)
		}
	}
}
