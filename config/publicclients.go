package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// PublicClient is one pre-registered client.
type PublicClient struct {
	// ID is the client_id the client sends: 1 to 200 printable
	// characters without spaces, not beginning with "mcpxc_" (the ids
	// dynamic registration gives). An https URL pins a client that would
	// otherwise be known by its metadata document: the document is then
	// never fetched.
	ID string `json:"id"`
	// Name is what the approver is shown; "" = the id.
	Name string `json:"name,omitempty"`
	// RedirectURIs are where the client may be sent back, matched
	// exactly: https, or http on a loopback host; 1 to 8 of them.
	RedirectURIs []string `json:"redirectUris"`
}

// decodePublicClients reads public.clients (raw, nil when absent).
func (p *problems) decodePublicClients(pc *Public, clients json.RawMessage) {
	if clients == nil || isNull(clients) {
		return
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(clients, &elems); err != nil {
		p.add("", "public.clients", "public.clients must be an array", `such as [{"id": "my-app", "redirectUris": ["https://app.example.com/callback"]}]`)
		return
	}
	seen := map[string]bool{}
	for i, e := range elems {
		field := fmt.Sprintf("public.clients[%d]", i)
		members, err := objectMembers(e)
		if err != nil {
			p.add("", field, "a client must be an object", `such as {"id": "my-app", "name": "My app", "redirectUris": ["https://app.example.com/callback"]}`)
			continue
		}
		var c PublicClient
		p.decodeFields("", field+".", members, map[string]fieldSpec{
			"id":           {&c.ID, "a string"},
			"name":         {&c.Name, "a string"},
			"redirectUris": {&c.RedirectURIs, "an array of URLs"},
		}, map[string]bool{})
		p.checkPublicClient(field, &c, seen)
		pc.Clients = append(pc.Clients, c)
	}
}

func (p *problems) checkPublicClient(field string, c *PublicClient, seen map[string]bool) {
	switch {
	case c.ID == "":
		p.add("", field+".id", "a client needs an id", `the client_id the client sends, such as "my-app"`)
	case len(c.ID) > 200 || strings.IndexFunc(c.ID, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0:
		p.add("", field+".id", "the id has spaces or unprintable characters, or is longer than 200", `such as "my-app"`)
	case strings.HasPrefix(c.ID, "mcpxc_"):
		p.add("", field+".id", fmt.Sprintf("the id %q begins with mcpxc_, the prefix of the ids dynamic registration gives", c.ID), "choose another id")
	case seen[c.ID]:
		p.add("", field+".id", fmt.Sprintf("the id %q is given twice", c.ID), "keep one of the two clients")
	}
	seen[c.ID] = true
	if len(c.Name) > 200 {
		p.add("", field+".name", "the name is longer than 200 characters", "shorten it")
	}
	if len(c.RedirectURIs) == 0 || len(c.RedirectURIs) > 8 {
		p.add("", field+".redirectUris", fmt.Sprintf("%d redirect URIs; give 1 to 8", len(c.RedirectURIs)), `such as ["https://app.example.com/callback"]`)
	}
	for j, r := range c.RedirectURIs {
		if msg := redirectProblem(r); msg != "" {
			p.add("", fmt.Sprintf("%s.redirectUris[%d]", field, j), msg, `use https, or http on localhost, 127.0.0.1 or [::1] (a native app)`)
		}
	}
}

// redirectProblem says what is wrong with a redirect URI, as the public
// face's authorization server checks it (auth/access.CheckRedirect).
func redirectProblem(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "":
		return fmt.Sprintf("redirect URI %q is not an absolute URL", raw)
	case u.Fragment != "" || u.User != nil || strings.Contains(raw, "#"):
		return fmt.Sprintf("redirect URI %q has a fragment or credentials", raw)
	case u.Scheme == "https", u.Scheme == "http" && loopbackHost(u.Hostname()):
		return ""
	}
	return fmt.Sprintf("redirect URI %q must be https, or http on a loopback host", raw)
}
