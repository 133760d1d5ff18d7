package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// GrantClientCredentials is Server.Grant for a machine-to-machine server
// (the MCP OAuth client credentials extension, SEP-1046): mcpx gets its
// tokens with its own credentials, with no person and no browser.
const GrantClientCredentials = "client_credentials"

// machine reports whether server signs in with client credentials.
func (c *Client) machine(server string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[server].Grant == GrantClientCredentials
}

// machineToken gets server a token with its client credentials (RFC 6749
// section 4.2; the client authenticated by its secret, or by a JWT
// assertion signed with its private key, RFC 7523), discovering the
// token endpoint from the challenge ch, and stores it.
func (c *Client) machineToken(ctx context.Context, server string, ch Challenge) (string, error) {
	c.mu.Lock()
	srv := c.servers[server]
	c.mu.Unlock()
	meta, err := Discover(ctx, c.hc, srv.URL, ch)
	if err != nil {
		return "", fmt.Errorf("discovering the authorization server of %s: %w", server, err)
	}
	asm := meta.Server
	reg := clientReg{Issuer: asm.Issuer, ID: srv.ClientID, Kind: "client-credentials", AuthMethod: "none"}
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {meta.Resource}}
	scopes := ch.Scopes
	if len(scopes) == 0 {
		scopes = meta.Scopes
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	switch {
	case srv.PrivateKey != "":
		assertion, err := clientAssertion(srv, asm.Issuer, c.now())
		if err != nil {
			return "", fmt.Errorf("signing the client assertion of %s: %w", server, err)
		}
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", assertion)
	case srv.ClientSecret != "":
		reg.AuthMethod = secretMethod(asm.TokenEndpointAuthMethodsSupported)
	}
	tr, err := c.tokenRequest(ctx, asm.TokenEndpoint, form, reg, srv.ClientSecret)
	if err != nil {
		return "", fmt.Errorf("getting a token for %s with its client credentials: %w", server, err)
	}
	granted := scopes
	if tr.Scope != "" {
		granted = strings.Fields(tr.Scope)
	}
	rec := &record{URL: srv.URL, Issuer: asm.Issuer, Resource: meta.Resource, Token: asm.TokenEndpoint, Revoke: asm.RevocationEndpoint,
		Client: reg, Scopes: granted, SignedIn: c.now(), Issued: c.now(), AccessToken: tr.AccessToken, TokenType: tr.TokenType}
	if n, err := tr.ExpiresIn.Int64(); err == nil && n > 0 {
		rec.Expiry = c.now().Add(time.Duration(n) * time.Second)
	}
	c.mu.Lock()
	s := c.stateLocked(who{server: server})
	s.rec, s.needs = rec, nil
	if err := c.st.save(who{server: server}, rec); err != nil {
		c.log.Warn("oauth: the token is kept in memory only", "server", server, "err", err)
	}
	c.mu.Unlock()
	c.log.Info("oauth: token from client credentials", "server", server, "issuer", asm.Issuer,
		"scopes", strings.Join(granted, " "), "expiry", rec.Expiry, "assertion", srv.PrivateKey != "")
	c.event(who{server: server}, EventSignedIn, "a token from the client credentials at "+asm.Issuer)
	return rec.AccessToken, nil
}

// clientAssertion is the private_key_jwt assertion of srv for the
// authorization server issuer (RFC 7523 section 3: iss and sub the client
// id, aud the issuer, short-lived, a unique jti).
func clientAssertion(srv Server, issuer string, now time.Time) (string, error) {
	key, method, err := signingKey(srv.PrivateKey, srv.SigningAlgorithm)
	if err != nil {
		return "", err
	}
	claims := jwt.MapClaims{"iss": srv.ClientID, "sub": srv.ClientID, "aud": issuer,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": rand.Text()}
	return jwt.NewWithClaims(method, claims).SignedString(key)
}

// signingKey parses a PEM private key (PKCS #8, SEC 1 or PKCS #1) and the
// signing method for it: alg if set, else ES256 for an EC key and RS256
// for an RSA one.
func signingKey(pem, alg string) (any, jwt.SigningMethod, error) {
	if k, err := jwt.ParseECPrivateKeyFromPEM([]byte(pem)); err == nil {
		m, err := method(alg, "ES256", []string{"ES256", "ES384", "ES512"})
		return k, m, err
	}
	if k, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(pem)); err == nil {
		m, err := method(alg, "RS256", []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
		return k, m, err
	}
	return nil, nil, errors.New("the private key is not a PEM EC or RSA private key")
}

func method(alg, def string, allowed []string) (jwt.SigningMethod, error) {
	if alg == "" {
		alg = def
	}
	if !slices.Contains(allowed, alg) {
		return nil, fmt.Errorf("signing algorithm %s does not fit the key (use one of %s)", alg, strings.Join(allowed, ", "))
	}
	return jwt.GetSigningMethod(alg), nil
}

// machineRoundTrip sends req for a client-credentials server: with its
// token while it lasts; a 401 gets a new token, once, and the request is
// sent again with it.
func (t *transport) machineRoundTrip(req *http.Request) (*http.Response, error) {
	tok := t.c.storedToken(t.server)
	resp, err := t.send(req, tok, false)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (req.Body != nil && req.GetBody == nil) {
		return resp, err
	}
	ch := ParseChallenge(resp.Header.Values("WWW-Authenticate"))
	drain(resp)
	fresh, err := t.c.machineToken(req.Context(), t.server, ch)
	if err != nil {
		t.c.log.Warn("oauth: no token from the client credentials", "server", t.server, "err", err)
		t.c.event(who{server: t.server}, EventFailed, err.Error())
		return nil, err
	}
	return t.send(req, fresh, true)
}

// storedToken is server's access token unless it is about to expire; "" =
// none.
func (c *Client) storedToken(server string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.stateLocked(who{server: server}).rec
	if r == nil || (!r.Expiry.IsZero() && c.now().Add(r.skew()).After(r.Expiry)) {
		return ""
	}
	return r.AccessToken
}
