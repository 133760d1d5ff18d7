package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"

	"mcpx.dev/mcpx/auth/rights"
)

// Public configures the public face (docs/public.md) beyond its flags:
// the pre-registered clients of its own authorization server
// (publicclients.go), or, with Issuer set, the access tokens of that
// external authorization server instead of its own: JWTs checked against
// the issuer's published keys, whose claims Grants map to rights. The
// daemon reads it at start; a reload that changes it takes effect at the
// next start.
type Public struct {
	// Clients are the pre-registered OAuth clients of mcpx's own
	// authorization server: public clients (PKCE, no secret) that sign in
	// by their id, without dynamic registration or a metadata document.
	Clients []PublicClient `json:"clients,omitempty"`
	// Issuer is the external authorization server's issuer identifier
	// ("https://idp.example.com"): https, or http on a loopback host. Its
	// metadata (RFC 8414, or OpenID discovery) names its keys.
	Issuer string `json:"issuer,omitempty"`
	// Audience is the audience a token must carry; "" = the resource the
	// client asked for (RFC 8707: <public-url>/mcp or /mcp/<server>).
	Audience string `json:"audience,omitempty"`
	// Grants map a token's claims to rights: a token gets the rule of
	// every grant it matches, and nothing when it matches none.
	Grants []PublicGrant `json:"grants,omitempty"`
}

// PublicGrant gives a rule of rights to the bearers of tokens whose claim
// Claim has one of Values (a string claim equal to one, or a list claim
// holding one). As in a tailnet grant, nothing is granted by omission:
// absent servers are no server, absent roots no declared cwd. It never
// grants admin, code mode or project config.
type PublicGrant struct {
	Claim   string   `json:"claim"`           // "sub", "email", "groups", …
	Values  []string `json:"values"`          // the values that match
	Servers []string `json:"servers"`         // the servers granted ("*" = every one)
	Roots   []string `json:"roots,omitempty"` // absolute directories ("/" = anywhere)
	Tools   []string `json:"tools,omitempty"` // tool patterns ("github.get_*"); absent = every tool
}

// claimRE is the shape of a claim name a grant may test.
var claimRE = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,100}$`)

func (p *problems) decodePublic(pub *Public, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "public", "public must be an object", `such as {"clients": [{"id": "my-app", "redirectUris": ["https://app.example.com/callback"]}]} or {"issuer": "https://idp.example.com", "grants": [{"claim": "sub", "values": ["alice"], "servers": ["notes"]}]}`)
		return
	}
	var grants []json.RawMessage
	var clients json.RawMessage
	p.decodeFields("", "public.", members, map[string]fieldSpec{
		"clients":  {&clients, "an array of clients"},
		"issuer":   {&pub.Issuer, "a string (the issuer's https URL)"},
		"audience": {&pub.Audience, "a string"},
		"grants":   {&grants, "an array of grants"},
	}, map[string]bool{})
	p.decodePublicClients(pub, clients)
	for i, g := range grants {
		field := fmt.Sprintf("public.grants[%d]", i)
		gm, err := objectMembers(g)
		if err != nil {
			p.add("", field, "a grant must be an object", `such as {"claim": "groups", "values": ["mcp-users"], "servers": ["notes"]}`)
			continue
		}
		var pg PublicGrant
		p.decodeFields("", field+".", gm, map[string]fieldSpec{
			"claim":   {&pg.Claim, "a string (a claim's name)"},
			"values":  {&pg.Values, "an array of strings"},
			"servers": {&pg.Servers, "an array of server names"},
			"roots":   {&pg.Roots, "an array of absolute directories"},
			"tools":   {&pg.Tools, "an array of tool patterns"},
		}, map[string]bool{})
		pub.Grants = append(pub.Grants, pg)
	}
}

// checkPublic checks the public block: an issuer URL that keeps tokens
// off the network in the clear, and grants that name a claim, values and
// servers, with absolute roots.
func (p *problems) checkPublic(pub *Public) {
	if pub.Issuer != "" {
		if err := CheckIssuer(pub.Issuer); err != nil {
			p.add("", "public.issuer", err.Error(), `give the issuer identifier its metadata names, such as "https://idp.example.com"`)
		}
	}
	if pub.Issuer == "" && (pub.Audience != "" || len(pub.Grants) > 0) {
		p.add("", "public.issuer", "audience and grants describe an external issuer, and none is given", `add "issuer": "https://idp.example.com", or drop them`)
	}
	if pub.Issuer != "" && len(pub.Clients) > 0 {
		p.add("", "public.clients", "clients are registered with mcpx's own authorization server, which an external issuer turns off", "register the clients at the issuer, or drop the issuer")
	}
	if pub.Issuer != "" && len(pub.Grants) == 0 {
		p.warn("", "public.grants", "no grants: every token of the issuer will be refused 403", `add one, such as {"claim": "sub", "values": ["alice"], "servers": ["notes"]}`)
	}
	for i, g := range pub.Grants {
		p.checkPublicGrant(fmt.Sprintf("public.grants[%d]", i), g)
	}
}

func (p *problems) checkPublicGrant(field string, g PublicGrant) {
	if !claimRE.MatchString(g.Claim) {
		p.add("", field+".claim", fmt.Sprintf("claim %q is not a claim's name", g.Claim), `name the token claim to test, such as "sub", "email" or "groups"`)
	}
	if len(g.Values) == 0 {
		p.add("", field+".values", "a grant needs the values that match", `such as ["alice"] for "claim": "sub"`)
	}
	if len(g.Servers) == 0 {
		p.add("", field+".servers", "a grant needs servers: absent servers grant none", `such as ["notes"], or ["*"] for every server`)
	}
	for j, r := range g.Roots {
		if !filepath.IsAbs(r) {
			p.add("", fmt.Sprintf("%s.roots[%d]", field, j), fmt.Sprintf("root %q is not absolute", r), `give an absolute directory, or "/" for anywhere`)
		}
	}
	for j, t := range g.Tools {
		if err := rights.CheckPattern(t); err != nil {
			p.add("", fmt.Sprintf("%s.tools[%d]", field, j), err.Error(), `write "server.tool", with * as the only wildcard: "github.get_*"`)
		}
	}
}

// CheckIssuer says what is wrong with an external issuer's identifier: it
// must be an https URL (or http on a loopback host) with no query,
// fragment or credentials.
func CheckIssuer(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Errorf("issuer %q is not an absolute https URL", raw)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("issuer %q has a query, fragment or credentials", raw)
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return fmt.Errorf("issuer %q would send its keys in the clear: use https (http only on a loopback host)", raw)
	}
	return nil
}
