package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Transport returns the http.RoundTripper that authorizes server's
// requests, for account where the server is PerCaller (its own sign-in
// alone; "" = the server's), over base (nil = http.DefaultTransport): it sends the stored
// access token, refreshes one about to expire, refreshes once after a 401,
// and turns a 401 it cannot cure, or a 403 insufficient_scope (step-up),
// into a *RequiredError, which the request's caller gets as its error.
// A request that carries an Authorization header of its own (a server's
// configured "headers") passes through untouched.
func (c *Client) Transport(server, account string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{c: c, server: server, account: account, base: base}
}

type transport struct {
	c               *Client
	server, account string
	base            http.RoundTripper
}

// who is the sign-in the transport's requests use now (a reload may have
// made the server PerCaller, or not).
func (t *transport) who() who {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.whoLocked(t.server, t.account)
}

// expirySkew refreshes an access token this long before it expires, or
// a quarter of its lifetime before when that is shorter: a token of five
// seconds is used for four, not refreshed before every request.
const expirySkew = 30 * time.Second

// refreshTimeout bounds a refresh, whatever becomes of the request that
// asked for it.
const refreshTimeout = 30 * time.Second

// skew is how long before r's access token expires it is refreshed.
func (r *record) skew() time.Duration {
	if life := r.Expiry.Sub(r.Issued); !r.Issued.IsZero() && life > 0 && life/4 < expirySkew {
		return life / 4
	}
	return expirySkew
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" || !t.c.Known(t.server) {
		return t.base.RoundTrip(req)
	}
	if t.c.machine(t.server) {
		return t.machineRoundTrip(req)
	}
	w := t.who()
	if e := t.c.Required(w.server, w.account); e != nil {
		closeBody(req)
		return nil, e
	}
	tok, err := t.c.accessToken(req.Context(), w, "")
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.send(req, tok, false)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized && tok != "" && (req.Body == nil || req.GetBody != nil) {
		// The token was refused: refresh once and retry (spec: "Token
		// Handling"), unless another request refreshed it already.
		if fresh, err := t.c.accessToken(req.Context(), w, tok); err == nil && fresh != "" && fresh != tok {
			drain(resp)
			if resp, err = t.send(req, fresh, true); err != nil {
				return nil, err
			}
		}
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		ch := ParseChallenge(resp.Header.Values("WWW-Authenticate"))
		drain(resp)
		reason := "it answers 401 and no sign-in is stored"
		if tok != "" {
			reason = "it refused the access token and no refresh cured that"
		}
		return nil, t.c.require(w, reason, ch, nil)
	case http.StatusForbidden:
		ch := ParseChallenge(resp.Header.Values("WWW-Authenticate"))
		if ch.Error == "insufficient_scope" {
			if e := t.c.stepUp(w, ch); e != nil {
				drain(resp)
				return nil, e
			}
		}
	}
	return resp, nil
}

// send sends req (a copy, its body anew when again) with the bearer tok.
func (t *transport) send(req *http.Request, tok string, again bool) (*http.Response, error) {
	r := req.Clone(req.Context())
	if again && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return t.base.RoundTrip(r)
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// closeBody closes a request's body a RoundTripper does not send, as
// http.RoundTripper's contract asks.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// accessToken returns server's access token, refreshed first if it is
// about to expire or is refused (it equals refused); "" when there is no
// sign-in. A refresh that fails is a *RequiredError: sign in again.
func (c *Client) accessToken(ctx context.Context, w who, refused string) (string, error) {
	c.mu.Lock()
	s := c.stateLocked(w)
	c.mu.Unlock()
	s.refresh.Lock()
	defer s.refresh.Unlock()
	c.mu.Lock()
	rec := s.rec
	var r record
	if rec != nil {
		r = *rec
	}
	c.mu.Unlock()
	if rec == nil || r.AccessToken == "" {
		return "", nil
	}
	stale := r.AccessToken == refused || (!r.Expiry.IsZero() && c.now().Add(r.skew()).After(r.Expiry))
	if !stale {
		return r.AccessToken, nil
	}
	if r.RefreshToken == "" {
		if refused != "" || c.now().After(r.Expiry) {
			return "", c.require(w, "the access token expired and there is no refresh token", Challenge{}, nil)
		}
		return r.AccessToken, nil // about to expire: use it while it lasts
	}
	// The refresh outlives the request that needed it: with rotation, a
	// refresh the authorization server answered and nobody read would
	// leave a used refresh token, whose reuse revokes the sign-in.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refreshTimeout)
	defer cancel()
	fresh, err := c.refresh(rctx, w, &r)
	if err != nil {
		c.log.Warn("oauth: refresh failed; sign in again", w.attrs("err", err)...)
		c.event(w, EventFailed, "refreshing the access token: "+err.Error())
		return "", c.require(w, "refreshing the access token failed", Challenge{}, nil)
	}
	c.event(w, EventRefreshed, "")
	return fresh, nil
}

// tokenResponse is a token endpoint's answer (RFC 6749 section 5.1).
type tokenResponse struct {
	AccessToken  string      `json:"access_token"`
	TokenType    string      `json:"token_type"`
	RefreshToken string      `json:"refresh_token"`
	ExpiresIn    json.Number `json:"expires_in"`
	Scope        string      `json:"scope"`
	Error        string      `json:"error"`
	Description  string      `json:"error_description"`
}

// refresh trades r's refresh token for new tokens, with the resource
// (RFC 8707; x/oauth2's refresher cannot send it), and stores them: a new
// refresh token replaces the old one (rotation).
func (c *Client) refresh(ctx context.Context, w who, r *record) (string, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.RefreshToken}}
	if r.Resource != "" {
		form.Set("resource", r.Resource)
	}
	secret := r.Client.Secret
	if r.Client.Kind == "configured" {
		c.mu.Lock()
		secret = c.servers[w.server].ClientSecret
		c.mu.Unlock()
	}
	tr, err := c.tokenRequest(ctx, r.Token, form, r.Client, secret)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stateLocked(w)
	if s.rec == nil {
		return "", errors.New("signed out meanwhile")
	}
	rec := *s.rec
	rec.AccessToken, rec.TokenType = tr.AccessToken, tr.TokenType
	if tr.RefreshToken != "" {
		rec.RefreshToken = tr.RefreshToken
	}
	rec.Expiry, rec.Issued = time.Time{}, c.now()
	if n, err := tr.ExpiresIn.Int64(); err == nil && n > 0 {
		rec.Expiry = c.now().Add(time.Duration(n) * time.Second)
	}
	if tr.Scope != "" {
		rec.Scopes = strings.Fields(tr.Scope)
	}
	s.rec = &rec
	if err := c.st.save(w, &rec); err != nil {
		c.log.Warn("oauth: the refreshed tokens are kept in memory only", w.attrs("err", err)...)
	}
	c.log.Info("oauth: refreshed", w.attrs("expiry", rec.Expiry, "rotated", tr.RefreshToken != "")...)
	return rec.AccessToken, nil
}

// tokenRequest POSTs form to the token endpoint, authenticating as reg
// does, and returns its answer; an error holds the endpoint's error code
// and description, never the body.
func (c *Client) tokenRequest(ctx context.Context, endpoint string, form url.Values, reg clientReg, secret string) (*tokenResponse, error) {
	req, err := c.clientRequest(ctx, endpoint, form, reg, secret)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var tr tokenResponse
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, &tr); err != nil && resp.StatusCode/100 == 2 {
		return nil, fmt.Errorf("the token endpoint answered %s with no JSON token", resp.Status)
	}
	if resp.StatusCode/100 != 2 || tr.AccessToken == "" {
		return nil, fmt.Errorf("the token endpoint answered %s: %s %s", resp.Status, tr.Error, tr.Description)
	}
	return &tr, nil
}

// clientRequest is a form POST to endpoint with reg's client
// authentication (RFC 6749 section 2.3.1): basic, post, or the client id
// alone (none).
func (c *Client) clientRequest(ctx context.Context, endpoint string, form url.Values, reg clientReg, secret string) (*http.Request, error) {
	form = cloneValues(form)
	basic := reg.AuthMethod == "client_secret_basic" && secret != ""
	if !basic {
		form.Set("client_id", reg.ID)
		if reg.AuthMethod == "client_secret_post" && secret != "" {
			form.Set("client_secret", secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		req.SetBasicAuth(url.QueryEscape(reg.ID), url.QueryEscape(secret))
	}
	return req, nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// Logout signs out of server (account's sign-in, where it is PerCaller): it revokes the tokens where the
// authorization server offers revocation (RFC 7009) and deletes the
// sign-in. revoked says whether a revocation was accepted; a refused or
// failed one is err, after the sign-in was deleted all the same.
func (c *Client) Logout(ctx context.Context, server, account string) (revoked bool, err error) {
	c.mu.Lock()
	srv, ok := c.servers[server]
	if !ok {
		c.mu.Unlock()
		return false, fmt.Errorf("server %q is not a url server", server)
	}
	w := c.whoLocked(server, account)
	s := c.stateLocked(w)
	rec := s.rec
	s.rec, s.needs, s.stepUps = nil, nil, nil
	rmErr := c.st.remove(w)
	c.mu.Unlock()
	if rmErr != nil {
		return false, fmt.Errorf("deleting the sign-in of %s: %w", server, rmErr)
	}
	if rec == nil || rec.AccessToken == "" || rec.Revoke == "" {
		c.log.Info("oauth: signed out", w.attrs("revoked", false)...)
		return false, nil
	}
	secret := rec.Client.Secret
	if rec.Client.Kind == "configured" {
		secret = srv.ClientSecret
	}
	for _, t := range []struct{ tok, hint string }{{rec.RefreshToken, "refresh_token"}, {rec.AccessToken, "access_token"}} {
		if t.tok == "" {
			continue
		}
		if e := c.revoke(ctx, rec, t.tok, t.hint, secret); e != nil && err == nil {
			err = fmt.Errorf("revoking the %s at %s: %w", strings.ReplaceAll(t.hint, "_", " "), rec.Revoke, e)
		}
	}
	c.log.Info("oauth: signed out", w.attrs("revoked", err == nil)...)
	return err == nil, err
}

func (c *Client) revoke(ctx context.Context, rec *record, tok, hint, secret string) error {
	req, err := c.clientRequest(ctx, rec.Revoke, url.Values{"token": {tok}, "token_type_hint": {hint}}, rec.Client, secret)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}
