package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Challenge is what a url server's 401 or 403 said in its
// WWW-Authenticate Bearer challenge (spec: basic/authorization,
// "Authorization Server Location" and "Step-Up Authorization Flow").
type Challenge struct {
	ResourceMetadata string   // resource_metadata: where the RFC 9728 document is
	Scopes           []string // scope, split
	Error            string   // error: "invalid_token", "insufficient_scope", …
}

// ParseChallenge reads the Bearer challenge of h (a response's
// WWW-Authenticate values); the zero Challenge when there is none.
func ParseChallenge(h []string) Challenge {
	cs, err := oauthex.ParseWWWAuthenticate(h)
	if err != nil {
		return Challenge{}
	}
	for _, c := range cs {
		if c.Scheme != "bearer" {
			continue
		}
		return Challenge{ResourceMetadata: c.Params["resource_metadata"], Scopes: strings.Fields(c.Params["scope"]), Error: c.Params["error"]}
	}
	return Challenge{}
}

// Metadata is what discovery found for one url server.
type Metadata struct {
	Resource  string                             // the RFC 8707 resource: the resource metadata's resource, or the server's URL
	Scopes    []string                           // the resource metadata's scopes_supported
	Server    *oauthex.AuthServerMeta            // the authorization server's metadata (or the 2025-03-26 defaults)
	Protected *oauthex.ProtectedResourceMetadata // nil = none found (2025-03-26 fallback)
}

// Discover finds the authorization server of the MCP endpoint serverURL,
// starting from its challenge ch (spec: basic/authorization, "Protected
// Resource Metadata Discovery Requirements" and "Authorization Server
// Metadata Discovery"; 2025-03-26 "Fallbacks for Servers without Metadata
// Discovery"). hc makes every request.
func Discover(ctx context.Context, hc *http.Client, serverURL string, ch Challenge) (*Metadata, error) {
	prm, err := protectedResource(ctx, hc, serverURL, ch.ResourceMetadata)
	if err != nil {
		return nil, err
	}
	m := &Metadata{Resource: serverURL, Protected: prm}
	issuer := ""
	if prm != nil {
		m.Resource, m.Scopes, issuer = prm.Resource, prm.ScopesSupported, prm.AuthorizationServers[0]
	} else {
		// 2025-03-26: the MCP server's origin is the authorization server.
		u, err := url.Parse(serverURL)
		if err != nil {
			return nil, fmt.Errorf("the server's URL: %w", err)
		}
		issuer = (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	}
	asm, err := sdkauth.GetAuthServerMetadata(ctx, issuer, hc)
	if err != nil {
		return nil, fmt.Errorf("the authorization server metadata of %s: %w", issuer, err)
	}
	if asm == nil {
		// 2025-03-26: the default endpoints.
		base := strings.TrimSuffix(issuer, "/")
		asm = &oauthex.AuthServerMeta{Issuer: issuer, AuthorizationEndpoint: base + "/authorize",
			TokenEndpoint: base + "/token", RegistrationEndpoint: base + "/register"}
	}
	m.Server = asm
	return m, nil
}

// protectedResource fetches the RFC 9728 document: the challenge's
// resource_metadata, else the well-known URI with the endpoint's path,
// else the one at the root. nil, nil = none found. A document found that
// names no authorization server is an error: the spec's newer revisions
// hold, and no fallback is tried.
func protectedResource(ctx context.Context, hc *http.Client, serverURL, fromChallenge string) (*oauthex.ProtectedResourceMetadata, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("the server's URL: %w", err)
	}
	type try struct{ url, resource string }
	var tries []try
	if fromChallenge != "" {
		tries = append(tries, try{fromChallenge, serverURL})
	}
	origin := url.URL{Scheme: u.Scheme, Host: u.Host}
	if p := strings.Trim(u.Path, "/"); p != "" {
		w := origin
		w.Path = "/.well-known/oauth-protected-resource/" + p
		tries = append(tries, try{w.String(), serverURL})
	}
	w := origin
	w.Path = "/.well-known/oauth-protected-resource"
	tries = append(tries, try{w.String(), origin.String()})
	var firstErr error
	for _, t := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.url, t.resource, hc)
		if err != nil || prm == nil {
			if firstErr == nil && err != nil && !notFound(err) {
				firstErr = err
			}
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected resource metadata at %s names no authorization server", t.url)
		}
		return prm, nil
	}
	// A document that was found and refused (its resource is not this
	// server's, say) is an error, never a reason to fall back to guessing.
	return nil, firstErr
}

// notFound reports whether err is oauthex's fetch answered with a 4xx
// status: no document there.
func notFound(err error) bool {
	return strings.Contains(err.Error(), "bad status 4")
}
