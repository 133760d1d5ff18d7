package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

// Step is one link of a url server's sign-in metadata chain, as Chain
// checks it: what was asked, and what it answered or why it failed.
type Step struct {
	Name   string // "challenge", "resource metadata", "authorization server metadata", "client identity"
	Detail string // what it found
	Err    error  // nil = this link holds
}

// Chain walks the metadata chain a sign-in to srv would (docs/oauth.md,
// "The flow"): the server's 401 and its challenge, the protected resource
// metadata, the authorization server's metadata, and how mcpx would
// identify itself there (a configured client, a Client ID Metadata
// Document, a registration endpoint). It stops at the first link that
// fails, which is last; a server that answers without a 401 needs no
// sign-in, and the chain is that one step. It never registers, and
// holds no secret.
func Chain(ctx context.Context, hc *http.Client, srv Server) []Step {
	if hc == nil {
		hc = &http.Client{}
	}
	c := &Client{hc: hc}
	status, ch, err := c.challenge(ctx, srv.URL)
	switch {
	case err != nil:
		return []Step{{Name: "challenge", Err: fmt.Errorf("the server does not answer: %w", err)}}
	case status != http.StatusUnauthorized && status != http.StatusForbidden:
		return []Step{{Name: "challenge", Detail: fmt.Sprintf("answers %d without a token: no sign-in needed", status)}}
	}
	steps := []Step{{Name: "challenge", Detail: fmt.Sprintf("401, %s", challengeText(ch))}}
	prm, err := protectedResource(ctx, hc, srv.URL, ch.ResourceMetadata)
	if err != nil {
		return append(steps, Step{Name: "resource metadata", Err: err})
	}
	issuer := ""
	if prm == nil {
		u, _ := url.Parse(srv.URL)
		issuer = (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
		steps = append(steps, Step{Name: "resource metadata", Detail: "none (the 2025-03-26 fallback: the server's origin is the authorization server)"})
	} else {
		issuer = prm.AuthorizationServers[0]
		steps = append(steps, Step{Name: "resource metadata", Detail: fmt.Sprintf("resource %s, authorization server %s", prm.Resource, issuer)})
	}
	asm, err := sdkauth.GetAuthServerMetadata(ctx, issuer, hc)
	switch {
	case err != nil:
		return append(steps, Step{Name: "authorization server metadata", Err: err})
	case asm == nil:
		steps = append(steps, Step{Name: "authorization server metadata", Detail: "none at " + issuer + " (the 2025-03-26 default endpoints)"})
		return append(steps, Step{Name: "client identity", Detail: "dynamic registration at the default /register"})
	}
	steps = append(steps, Step{Name: "authorization server metadata", Detail: "issuer " + asm.Issuer})
	id := Step{Name: "client identity"}
	switch {
	case srv.ClientID != "":
		id.Detail = "the configured client " + srv.ClientID
	case srv.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported:
		id.Detail = "the client metadata document " + srv.ClientMetadataURL
	case asm.RegistrationEndpoint != "":
		id.Detail = "dynamic registration at " + asm.RegistrationEndpoint
	default:
		id.Err = fmt.Errorf("the authorization server offers no dynamic client registration and mcpx has no client there")
	}
	return append(steps, id)
}

// challenge asks the server, with no token, for its status and challenge.
func (c *Client) challenge(ctx context.Context, serverURL string) (int, Challenge, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(probeBody))
	if err != nil {
		return 0, Challenge{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, Challenge{}, err
	}
	drain(resp)
	return resp.StatusCode, ParseChallenge(resp.Header.Values("WWW-Authenticate")), nil
}

func challengeText(ch Challenge) string {
	var parts []string
	if ch.ResourceMetadata != "" {
		parts = append(parts, "resource_metadata "+ch.ResourceMetadata)
	}
	if len(ch.Scopes) > 0 {
		parts = append(parts, "scope "+strings.Join(ch.Scopes, " "))
	}
	if len(parts) == 0 {
		return "a challenge that names nothing"
	}
	return strings.Join(parts, ", ")
}
