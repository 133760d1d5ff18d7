package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// OAuth is how mcpx identifies itself when it signs in to a url server
// (docs/oauth.md). A url server needs none to be signed in to: without a
// client here, mcpx registers itself (dynamic client registration) where
// the authorization server allows it.
type OAuth struct {
	// ClientID and ClientSecret are a client registered in advance with
	// the server's authorization server. They may hold ${env:NAME}, read
	// from the daemon's environment (the secret should).
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientMetadataURL is mcpx's Client ID Metadata Document (an https
	// URL with a path), used as the client id where the authorization
	// server supports such documents.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// Grant is "client_credentials" for a machine-to-machine server:
	// mcpx gets its tokens with ClientID and ClientSecret or PrivateKey,
	// and nobody signs in; "" = "authorization_code", a person signs in.
	Grant string `json:"grant,omitempty"`
	// PrivateKey (a PEM EC or RSA private key, best ${env:NAME}) signs a
	// JWT client assertion (private_key_jwt, RFC 7523) with
	// SigningAlgorithm ("" = ES256 or RS256, by the key) instead of a
	// secret: client_credentials only.
	PrivateKey       string `json:"privateKey,omitempty"`
	SigningAlgorithm string `json:"signingAlgorithm,omitempty"`
	// PerCaller makes each caller sign in for themselves: their tokens
	// serve only their calls, on an upstream session of their own; false
	// = the owner signs in once for every caller.
	PerCaller bool `json:"perCaller,omitempty"`
}

const oauthWant = `an object such as {"clientId": "mcpx", "clientSecret": "${env:MCP_CLIENT_SECRET}"}`

// decodeOAuth decodes a server's "oauth" object, its fields checked like
// the server's own.
func (p *problems) decodeOAuth(server string, raw json.RawMessage) *OAuth {
	members, err := objectMembers(raw)
	if err != nil {
		p.add(server, "oauth", "want an object, got "+clip(string(raw), 20), "use "+oauthWant)
		return nil
	}
	o := new(OAuth)
	p.decodeFields(server, "oauth.", members, map[string]fieldSpec{
		"clientId":          {&o.ClientID, "a string"},
		"clientSecret":      {&o.ClientSecret, "a string"},
		"clientMetadataUrl": {&o.ClientMetadataURL, "a string (an https URL)"},
		"grant":             {&o.Grant, `"authorization_code" or "client_credentials"`},
		"privateKey":        {&o.PrivateKey, "a string (a PEM private key, best ${env:NAME})"},
		"signingAlgorithm":  {&o.SigningAlgorithm, `"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384" or "PS512"`},
		"perCaller":         {&o.PerCaller, "true or false"},
	}, map[string]bool{})
	return o
}

// checkOAuth checks a server's "oauth": a url server's, with an
// Authorization header of its own nowhere beside it.
func (p *problems) checkOAuth(name string, s *Server) {
	o := s.OAuth
	if o == nil {
		return
	}
	if s.URL == "" {
		p.add(name, "oauth", "oauth is for url servers: mcpx signs in to a hosted server for you",
			`remove "oauth"; an openapi service's client credentials go in openapi.oauth2`)
		return
	}
	for k := range s.Headers {
		if strings.EqualFold(k, "Authorization") {
			p.add(name, "oauth", "oauth is set beside an Authorization header, which would be sent instead of the signed-in token",
				`remove headers.`+k+` to sign in, or "oauth" to keep the header`)
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		p.add(name, "oauth.clientSecret", "clientSecret without clientId", "set oauth.clientId to the client the secret belongs to")
	}
	if o.ClientSecret != "" && !envOnly.MatchString(o.ClientSecret) {
		p.warn(name, "oauth.clientSecret", "the client secret is written in the config file",
			"keep it in the daemon's environment and write ${env:NAME} here")
	}
	p.checkEnvOnly(name, "oauth.clientId", o.ClientID)
	p.checkEnvOnly(name, "oauth.clientSecret", o.ClientSecret)
	p.checkEnvOnly(name, "oauth.privateKey", o.PrivateKey)
	p.checkGrant(name, o)
	if m := o.ClientMetadataURL; m != "" {
		u, err := url.Parse(m)
		if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			p.add(name, "oauth.clientMetadataUrl", "clientMetadataUrl must be an https URL with a path",
				"the URL where mcpx's client metadata document is published, such as https://example.com/mcpx/client.json")
		}
	}
}

var signingAlgorithms = []string{"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}

// checkGrant checks oauth.grant and what it needs: client credentials need
// a client id and a secret or a private key, which a sign-in has no use
// for.
func (p *problems) checkGrant(name string, o *OAuth) {
	switch o.Grant {
	case "", "authorization_code":
		if o.PrivateKey != "" || o.SigningAlgorithm != "" {
			p.add(name, "oauth.privateKey", "a private key is for the client_credentials grant",
				`set "grant": "client_credentials", or remove privateKey and signingAlgorithm`)
		}
		return
	case "client_credentials":
		if o.PerCaller {
			p.add(name, "oauth.perCaller", "perCaller is for sign-ins by people: a client_credentials server has one machine identity",
				`remove "perCaller", or the client_credentials grant`)
		}
	default:
		p.add(name, "oauth.grant", fmt.Sprintf("unknown grant %q", o.Grant), `use "authorization_code" (a person signs in) or "client_credentials" (machine to machine)`)
		return
	}
	if o.ClientID == "" {
		p.add(name, "oauth.clientId", "the client_credentials grant needs clientId", "set the client id the authorization server issued")
	}
	if (o.ClientSecret == "") == (o.PrivateKey == "") {
		p.add(name, "oauth.clientSecret", "the client_credentials grant needs clientSecret or privateKey, one of them",
			"set clientSecret to ${env:NAME}, or privateKey to ${env:NAME} holding a PEM private key")
	}
	if o.PrivateKey != "" && !envOnly.MatchString(o.PrivateKey) {
		p.warn(name, "oauth.privateKey", "the private key is written in the config file",
			"keep it in the daemon's environment and write ${env:NAME} here")
	}
	if o.SigningAlgorithm != "" && !slices.Contains(signingAlgorithms, o.SigningAlgorithm) {
		p.add(name, "oauth.signingAlgorithm", fmt.Sprintf("unknown signing algorithm %q", o.SigningAlgorithm), "use one of "+strings.Join(signingAlgorithms, ", "))
	}
}
