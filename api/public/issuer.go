package public

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
)

// An external issuer (docs/public.md, "An external issuer"): the face
// takes the JWT access tokens of an authorization server the user already
// runs instead of running its own. A token is admitted when it is signed
// by a key the issuer publishes (its JWKS, found through its RFC 8414 or
// OpenID metadata), with an algorithm of the allow-list (asymmetric only:
// never none, never an HMAC keyed with a public key), by that issuer, for
// this face's resource (RFC 8707) or the configured audience, within its
// exp and nbf; its claims then map to rights through the grants, and a
// token they map to nothing is refused 403. An unknown key id refetches
// the keys, at most once a minute (the issuer rotated its key).

// IssuerOptions configure an external issuer (Options.Issuer).
type IssuerOptions struct {
	URL      string       // the issuer identifier, as its metadata names it
	Audience string       // "" = the face's resource (<origin>/mcp or /mcp/<server>)
	Grants   []ClaimGrant // claims to rights; none = every token refused 403
	// HTTPClient fetches the metadata and the keys; nil = one with a
	// 10-second timeout.
	HTTPClient *http.Client
	Now        func() time.Time // the clock of exp and nbf; nil = time.Now (tests)
}

// ClaimGrant gives Rule to the bearer of a token whose claim Claim is
// one of Values (a string claim) or holds one (a list claim).
type ClaimGrant struct {
	Claim  string
	Values []string
	Rule   rights.Rule
}

// issuerAlgs are the signature algorithms a token may use: asymmetric
// ones, whose keys the issuer publishes.
var issuerAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

const (
	issuerLeeway     = 30 * time.Second // clock skew allowed on exp and nbf
	discoveryBackoff = 30 * time.Second // between failed discoveries
	maxMetadata      = 1 << 20
	maxJWT           = 16 << 10
)

// issuer checks the tokens of an external issuer. Its key refetch on an
// unknown key id is rate-limited inside keyfunc (RefreshUnknownKID).
type issuer struct {
	o      IssuerOptions
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	keys   keyfunc.Keyfunc // guarded by mu; nil until discovered
	failed time.Time       // guarded by mu: when discovery last failed
}

func newIssuer(o IssuerOptions, log *slog.Logger) (*issuer, error) {
	if err := checkIssuerURL(o.URL); err != nil {
		return nil, err
	}
	if o.HTTPClient == nil {
		// A redirect may not take the metadata or the keys off https.
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) >= 5 || (r.URL.Scheme != "https" && !(r.URL.Scheme == "http" && isLoopback(r.URL.Hostname()))) {
				return errors.New("a redirect off https, or too many")
			}
			return nil
		}}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &issuer{o: o, log: log, ctx: ctx, cancel: cancel}, nil
}

// checkIssuerURL says what is wrong with an issuer identifier or a jwks_uri: https,
// or http on a loopback host.
func checkIssuerURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("issuer URL %q is not an https URL without query, fragment or credentials", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("issuer URL %q: keys are fetched over https only (http on a loopback host)", raw)
}

func isLoopback(h string) bool {
	ip := net.ParseIP(h)
	return h == "localhost" || (ip != nil && ip.IsLoopback())
}

// keyfunc returns the issuer's keys, discovering them at the first call
// (and again after a failure, at most every discoveryBackoff).
func (is *issuer) keyfunc() (keyfunc.Keyfunc, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.keys != nil {
		return is.keys, nil
	}
	if !is.failed.IsZero() && time.Since(is.failed) < discoveryBackoff {
		return nil, errors.New("the issuer's metadata could not be read lately")
	}
	jwks, err := is.discover()
	if err == nil {
		is.keys, err = keyfunc.NewDefaultOverrideCtx(is.ctx, []string{jwks}, keyfunc.Override{
			Client: is.o.HTTPClient, HTTPTimeout: 10 * time.Second, RateLimitWaitMax: 10 * time.Second,
			RefreshUnknownKID: rate.NewLimiter(rate.Every(time.Minute), 1),
			RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
				return func(_ context.Context, err error) {
					is.log.Warn("external issuer: fetching its keys", "jwks", u, "err", err)
				}
			},
		})
	}
	if err != nil {
		is.failed = time.Now()
		is.log.Warn("external issuer: discovery", "issuer", is.o.URL, "err", err)
		return nil, err
	}
	return is.keys, nil
}

// metadataURLs are where the issuer's metadata may be: RFC 8414's
// well-known path inserted before the issuer's path, then OpenID
// discovery's appended after it.
func metadataURLs(issuer string) []string {
	u, _ := url.Parse(issuer)
	path := strings.TrimSuffix(u.Path, "/")
	origin := u.Scheme + "://" + u.Host
	return []string{origin + "/.well-known/oauth-authorization-server" + path, origin + path + "/.well-known/openid-configuration"}
}

// discover reads the issuer's metadata and returns its jwks_uri.
func (is *issuer) discover() (string, error) {
	var errs []error
	for _, u := range metadataURLs(is.o.URL) {
		var md struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		err := is.getJSON(u, &md)
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case md.Issuer != is.o.URL:
			return "", fmt.Errorf("%s names the issuer %q, not %q (RFC 8414 §3.3): configure public.issuer exactly as the issuer names itself", u, md.Issuer, is.o.URL)
		case md.JWKSURI == "":
			return "", fmt.Errorf("%s names no jwks_uri: the issuer publishes no keys to check its tokens with", u)
		}
		if err := checkIssuerURL(md.JWKSURI); err != nil {
			return "", fmt.Errorf("%s: jwks_uri: %w", u, err)
		}
		return md.JWKSURI, nil
	}
	return "", errors.Join(errs...)
}

func (is *issuer) getJSON(u string, v any) error {
	ctx, cancel := context.WithTimeout(is.ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := is.o.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// check admits secret for the resources (the one asked for first) and
// returns the token it stands for, with the rights its claims map to.
func (is *issuer) check(secret string, resources []string) (access.Token, *Refusal) {
	if len(secret) > maxJWT || strings.Count(secret, ".") != 2 {
		return access.Token{}, invalidToken("the access token is not a JWT of this server's issuer: sign in again")
	}
	kf, err := is.keyfunc()
	if err != nil {
		return access.Token{}, &Refusal{Status: http.StatusServiceUnavailable, Msg: "this server cannot check its issuer's tokens now; retry later"}
	}
	aud := resources
	if is.o.Audience != "" {
		aud = []string{is.o.Audience}
	}
	claims := jwt.MapClaims{}
	p := jwt.NewParser(jwt.WithValidMethods(issuerAlgs), jwt.WithIssuer(is.o.URL), jwt.WithAudience(aud...),
		jwt.WithExpirationRequired(), jwt.WithLeeway(issuerLeeway), jwt.WithTimeFunc(is.o.Now))
	if _, err := p.ParseWithClaims(secret, claims, kf.Keyfunc); err != nil {
		return access.Token{}, issuerRefusal(err, aud[0])
	}
	return is.token(claims, resources[0])
}

// issuerRefusal says why a JWT was refused without saying more than the
// client needs: no key, no claim values, no internal error.
func issuerRefusal(err error, aud string) *Refusal {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return invalidToken("the access token has expired: refresh it or sign in again")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return invalidToken("the access token is not valid yet")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return invalidToken("the access token was issued for another resource; this one is " + aud)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return invalidToken("the access token is not from this server's issuer: sign in there")
	}
	return invalidToken("the access token is not one this server's issuer signed: sign in again")
}

func invalidToken(msg string) *Refusal {
	return &Refusal{Status: http.StatusUnauthorized, Code: "invalid_token", Msg: msg}
}

// token is the admitted token's record: its rights are the rules of the
// grants its claims match; none is a 403 naming the claims looked at.
func (is *issuer) token(claims jwt.MapClaims, resource string) (access.Token, *Refusal) {
	sub, _ := claims["sub"].(string)
	var r rights.Rights
	var looked []string
	for _, g := range is.o.Grants {
		if !slices.Contains(looked, g.Claim) {
			looked = append(looked, g.Claim)
		}
		if claimMatches(claims[g.Claim], g.Values) {
			r = append(r, g.Rule.Granted())
		}
	}
	if len(r) == 0 {
		msg := "the access token is valid but grants nothing here: this server's public.grants match no claim of it"
		if len(looked) > 0 {
			msg = "the access token is valid but grants nothing here: no grant matches its " + strings.Join(looked, ", ") +
				"; the server's owner adds one to public.grants"
		}
		return access.Token{}, &Refusal{Status: http.StatusForbidden, Msg: msg}
	}
	client, _ := claims["client_id"].(string)
	if client == "" {
		client, _ = claims["azp"].(string)
	}
	jti, _ := claims["jti"].(string)
	var exp time.Time
	if e, err := claims.GetExpirationTime(); err == nil && e != nil {
		exp = e.Time
	}
	return access.Token{ID: jti, Client: cmp.Or(client, "unknown"), Resource: resource, Rights: r, Approver: cmp.Or(sub, "unknown"),
		Expires: exp}, nil
}

// claimMatches: a string claim equal to one of values, or a list claim
// holding one.
func claimMatches(c any, values []string) bool {
	switch v := c.(type) {
	case string:
		return slices.Contains(values, v)
	case []any:
		return slices.ContainsFunc(v, func(e any) bool { s, ok := e.(string); return ok && slices.Contains(values, s) })
	}
	return false
}

// close stops the keys' refresh.
func (is *issuer) close() { is.cancel() }
