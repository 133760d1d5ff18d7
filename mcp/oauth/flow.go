package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// pending is a sign-in begun and not yet completed. It lives in memory
// only: the verifier never leaves the daemon.
type pending struct {
	who      who
	url      string // the server's URL when it began
	cfg      oauth2.Config
	verifier string
	meta     *Metadata
	client   clientReg
	secret   string // the client's secret (a configured one is not stored)
	scopes   []string
	expires  time.Time
}

// Login is a sign-in begun: the authorization URL to open, and its state.
type Login struct {
	URL     string // the authorization request (holds no secret: the PKCE challenge, not the verifier)
	State   string
	Expires time.Time // Complete must come before
}

// Begin starts signing in to server (account's own sign-in, where the
// server is PerCaller; Complete must name the same account), for a user agent that will be sent
// back to redirectURI (a loopback listener of the CLI): it discovers the
// authorization server, identifies mcpx to it (registering if it must)
// and returns the authorization URL (spec: basic/authorization,
// "Authorization Flow Steps").
func (c *Client) Begin(ctx context.Context, server, account, redirectURI string) (*Login, error) {
	if err := checkRedirect(redirectURI); err != nil {
		return nil, err
	}
	c.mu.Lock()
	srv, ok := c.servers[server]
	w := c.whoLocked(server, account)
	var ch Challenge
	var rec *record
	if ok {
		s := c.stateLocked(w)
		ch, rec = s.challenge, s.rec
	}
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("server %q is not a url server", server)
	}
	if srv.Grant == GrantClientCredentials {
		return nil, fmt.Errorf("server %q gets its tokens with its client credentials (oauth.grant): nobody signs in to it", server)
	}
	if ch.ResourceMetadata == "" && len(ch.Scopes) == 0 {
		ch = c.probe(ctx, srv.URL)
	}
	meta, err := Discover(ctx, c.hc, srv.URL, ch)
	if err != nil {
		return nil, fmt.Errorf("discovering the authorization server of %s: %w", server, err)
	}
	reg, secret, err := c.identify(ctx, w, srv, rec, meta.Server, redirectURI)
	if err != nil {
		return nil, err
	}
	scopes := c.scopes(ch, meta, rec, reg)
	p := &pending{who: w, url: srv.URL, verifier: oauth2.GenerateVerifier(), meta: meta, client: reg,
		secret: secret, scopes: scopes, expires: c.now().Add(pendingTTL)}
	p.cfg = oauth2.Config{ClientID: reg.ID, ClientSecret: secret, RedirectURL: redirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: meta.Server.AuthorizationEndpoint, TokenURL: meta.Server.TokenEndpoint,
			AuthStyle: authStyle(reg.AuthMethod)}}
	state := rand.Text()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(p.verifier), oauth2.SetAuthURLParam("resource", meta.Resource)}
	if slices.Contains(scopes, "offline_access") {
		// OpenID Connect Core 1.0, section 11: an OpenID provider ignores
		// offline_access (no refresh token) unless the request asks for
		// consent; an authorization server that does not know prompt
		// ignores it (RFC 6749, section 3.1).
		opts = append(opts, oauth2.SetAuthURLParam("prompt", "consent"))
	}
	u := p.cfg.AuthCodeURL(state, opts...)
	c.mu.Lock()
	for k, q := range c.pending {
		if c.now().After(q.expires) {
			delete(c.pending, k)
		}
	}
	c.pending[state] = p
	c.mu.Unlock()
	c.log.Info("oauth: sign-in begun", w.attrs("issuer", meta.Server.Issuer, "client", reg.Kind, "scopes", strings.Join(scopes, " "))...)
	return &Login{URL: u, State: state, Expires: p.expires}, nil
}

// scopes chooses what to ask for (spec: basic/authorization, "Scope
// Selection Strategy"): the challenge's, else the resource metadata's
// scopes_supported, else none; a step-up adds those already granted;
// offline_access is added where the authorization server lists it.
func (c *Client) scopes(ch Challenge, meta *Metadata, rec *record, reg clientReg) []string {
	scopes := slices.Clone(ch.Scopes)
	if len(scopes) == 0 {
		scopes = slices.Clone(meta.Scopes)
	}
	if ch.Error == "insufficient_scope" && rec != nil && rec.Issuer == reg.Issuer {
		for _, s := range rec.Scopes {
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
	}
	if slices.Contains(meta.Server.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	return scopes
}

// probeBody is the request that asks a server for its challenge: an
// initialize, which a server that needs sign-in answers 401.
const probeBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpx","version":"sign-in"}}}`

// probe asks the server, with no token, for its challenge: an initialize
// request, which a server that needs sign-in answers 401. The zero
// Challenge when it says nothing.
func (c *Client) probe(ctx context.Context, serverURL string) Challenge {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(probeBody))
	if err != nil {
		return Challenge{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return Challenge{}
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return Challenge{}
	}
	return ParseChallenge(resp.Header.Values("WWW-Authenticate"))
}

// identify says who mcpx is to the authorization server asm, in the
// issue's order: a configured client, a Client ID Metadata Document where
// asm supports them, a registration (one kept for this issuer and
// redirect URI, else a new one).
func (c *Client) identify(ctx context.Context, w who, srv Server, rec *record, asm *oauthex.AuthServerMeta, redirectURI string) (clientReg, string, error) {
	switch {
	case srv.ClientID != "":
		method := "none"
		if srv.ClientSecret != "" {
			method = secretMethod(asm.TokenEndpointAuthMethodsSupported)
		}
		return clientReg{Issuer: asm.Issuer, ID: srv.ClientID, AuthMethod: method, Kind: "configured"}, srv.ClientSecret, nil
	case srv.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported:
		return clientReg{Issuer: asm.Issuer, ID: srv.ClientMetadataURL, AuthMethod: "none", Kind: "metadata-document"}, "", nil
	case asm.RegistrationEndpoint == "":
		return clientReg{}, "", fmt.Errorf("the authorization server %s of %s offers no dynamic client registration"+
			" and mcpx has no client there: register one and set servers.%s.oauth.clientId (and clientSecret)", asm.Issuer, w.server, w.server)
	}
	if rec != nil {
		for _, r := range rec.Registrations {
			if r.Issuer == asm.Issuer && r.RedirectURI == redirectURI {
				return r, r.Secret, nil
			}
		}
	}
	name := c.opts.ClientName
	if name == "" {
		name = "mcpx"
	}
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirectURI}, ClientName: name, ApplicationType: "native",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}, c.hc)
	if err != nil {
		return clientReg{}, "", fmt.Errorf("registering mcpx with %s: %w", asm.Issuer, err)
	}
	method := resp.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic" // RFC 7591 section 2
		if resp.ClientSecret == "" {
			method = "none"
		}
	}
	reg := clientReg{Issuer: asm.Issuer, RedirectURI: redirectURI, ID: resp.ClientID, Secret: resp.ClientSecret, AuthMethod: method, Kind: "registered"}
	c.keepRegistration(w, reg)
	return reg, reg.Secret, nil
}

// keepRegistration adds reg to server's record (made if there is none),
// replacing one for the same issuer and redirect URI.
func (c *Client) keepRegistration(w who, reg clientReg) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stateLocked(w)
	rec := s.rec
	if rec == nil {
		rec = &record{URL: c.servers[w.server].URL}
	}
	rec.Registrations = slices.DeleteFunc(rec.Registrations, func(r clientReg) bool {
		return r.Issuer == reg.Issuer && r.RedirectURI == reg.RedirectURI
	})
	rec.Registrations = append(rec.Registrations, reg)
	s.rec = rec
	if err := c.st.save(w, rec); err != nil {
		c.log.Warn("oauth: keeping the client registration", w.attrs("err", err)...)
	}
}

// secretMethod is the client authentication a client with a secret uses,
// of those the token endpoint supports: client_secret_post, then
// client_secret_basic (the default when it says nothing: RFC 8414).
func secretMethod(supported []string) string {
	for _, m := range []string{"client_secret_post", "client_secret_basic"} {
		if slices.Contains(supported, m) {
			return m
		}
	}
	return "client_secret_basic"
}

func authStyle(method string) oauth2.AuthStyle {
	if method == "client_secret_basic" {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams // post, and none (no secret is sent)
}

// checkRedirect accepts a loopback http redirect URI only: the CLI's
// listener (RFC 8252 section 7.3).
func checkRedirect(redirectURI string) error {
	u, err := url.Parse(redirectURI)
	if err != nil || u.Scheme != "http" || (u.Hostname() != "127.0.0.1" && u.Hostname() != "::1" && u.Hostname() != "localhost") {
		return fmt.Errorf("the redirect URI must be a loopback http URL such as http://127.0.0.1:8123/callback, got %q", redirectURI)
	}
	return nil
}

// Complete finishes account's sign-in to server that Begin returned state for,
// with the authorization response's code and iss: it checks them, exchanges
// the code (with the PKCE verifier and the resource) and stores the
// tokens.
func (c *Client) Complete(ctx context.Context, server, account, state, code, iss string) (Status, error) {
	c.mu.Lock()
	w := c.whoLocked(server, account)
	p := c.pending[state]
	if p != nil && p.who == w {
		delete(c.pending, state) // one try: a code is good once
	}
	c.mu.Unlock()
	switch {
	case p == nil || p.who != w: // another caller's sign-in is not this one's to complete
		return Status{}, fmt.Errorf("no sign-in to %s is waiting for this answer (its state is unknown): run `mcpx auth login %s` again", server, server)
	case c.now().After(p.expires):
		return Status{}, fmt.Errorf("the sign-in to %s took longer than %v: run `mcpx auth login %s` again", server, pendingTTL, server)
	case code == "":
		return Status{}, fmt.Errorf("the authorization server sent no code back")
	}
	if err := checkIss(iss, p.meta.Server); err != nil {
		c.log.Warn("oauth: sign-in refused", w.attrs("err", err)...)
		c.event(w, EventFailed, err.Error())
		return Status{}, err
	}
	hctx := context.WithValue(ctx, oauth2.HTTPClient, c.hc)
	tok, err := p.cfg.Exchange(hctx, code, oauth2.VerifierOption(p.verifier), oauth2.SetAuthURLParam("resource", p.meta.Resource))
	if err != nil {
		err = fmt.Errorf("exchanging the code at %s: %w", p.meta.Server.TokenEndpoint, tokenErr(err))
		c.event(w, EventFailed, err.Error())
		return Status{}, err
	}
	c.signedIn(w, p, tok)
	c.event(w, EventSignedIn, fmt.Sprintf("signed in at %s (%s client)", p.meta.Server.Issuer, p.client.Kind))
	st, _ := c.Status(server, account)
	return st, nil
}

// signedIn stores p's tokens as server's sign-in and clears what a
// request found out.
func (c *Client) signedIn(w who, p *pending, tok *oauth2.Token) {
	granted := p.scopes
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		granted = strings.Fields(s)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stateLocked(w)
	rec := &record{URL: p.url, Issuer: p.meta.Server.Issuer, Resource: p.meta.Resource, Token: p.meta.Server.TokenEndpoint,
		Revoke: p.meta.Server.RevocationEndpoint, Client: p.client, Scopes: granted, SignedIn: c.now(),
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, Issued: c.now()}
	if s.rec != nil {
		rec.Registrations = s.rec.Registrations
	}
	s.rec, s.needs = rec, nil
	if err := c.st.save(w, rec); err != nil {
		c.log.Warn("oauth: the sign-in is kept in memory only", w.attrs("err", err)...)
	}
	c.log.Info("oauth: signed in", w.attrs("issuer", rec.Issuer, "scopes", strings.Join(granted, " "),
		"expiry", rec.Expiry, "refresh", rec.RefreshToken != "")...)
}

// checkIss is RFC 9207's check of the authorization response's iss
// against the metadata's issuer, by simple string comparison (no
// normalization): required when the metadata advertises it, and a present
// iss must match whether advertised or not (SEP-2468).
func checkIss(iss string, asm *oauthex.AuthServerMeta) error {
	switch {
	case asm.AuthorizationResponseIssParameterSupported && iss == "":
		return errors.New("the authorization server advertises the iss parameter (RFC 9207) but sent none back: the answer may come from another server")
	case iss != "" && iss != asm.Issuer:
		return fmt.Errorf("the answer's issuer %q is not the authorization server's %q (RFC 9207): refused", iss, asm.Issuer)
	}
	return nil
}

// tokenErr is err from the token endpoint without its raw body: an
// oauth2.RetrieveError's error code and description only.
func tokenErr(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		s := re.Response.Status
		if re.ErrorCode != "" {
			s += ": " + re.ErrorCode
		}
		if re.ErrorDescription != "" {
			s += ": " + re.ErrorDescription
		}
		return errors.New(s)
	}
	return err
}
