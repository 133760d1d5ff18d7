package public

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"code.dny.dev/ssrf"
	"golang.org/x/sync/singleflight"

	"mcpx.dev/mcpx/auth/access"
)

// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document,
// the MCP authorization spec's preferred way for a client to identify): a
// client_id that is an https URL with a path names a JSON document of the
// client's metadata, which the authorization server fetches. The fetch is
// a request to an address anyone on the internet chooses, so it is held
// tight: https only; dialled only to public addresses (code.dny.dev/ssrf
// checks each address the dialer connects to, after DNS resolution, so a
// name that resolves to a private address, or changes its answer between
// two lookups, reaches nothing); no redirects; 200 only; a JSON content
// type; at most MaxCIMDSize bytes; cimdTimeout in all; a few fetches at
// once; an answer kept by its Cache-Control within [cimdMinTTL,
// cimdMaxTTL].

// MaxCIMDSize is the largest metadata document fetched (the draft's
// suggestion: 5 KB).
const MaxCIMDSize = 5 << 10

const (
	cimdTimeout     = 5 * time.Second  // a whole fetch: dial, TLS, headers, body
	cimdMinTTL      = time.Minute      // a document is fetched at most once a minute, whatever its host says
	cimdDefaultTTL  = 10 * time.Minute // a document without a max-age
	cimdMaxTTL      = 24 * time.Hour
	cimdFailTTL     = 10 * time.Second // a failed fetch is not retried sooner
	cimdMaxCached   = 256
	cimdMaxInflight = 8
	maxClientIDLen  = 2000
)

// FetchTest loosens the fetch of metadata documents for tests, which
// serve them from a loopback HTTPS host: Allow are prefixes the fetch may
// dial although they are not public, RootCAs the test host's certificate.
// Only tests set it: cmd/mcpx never does and no config key reaches it
// (TestFetchTestOnlyInTests). The zero value is the production fetch.
type FetchTest struct {
	Allow   []netip.Prefix
	RootCAs *x509.CertPool
}

// cimdError is why a metadata document could not be used: its text names
// what is wrong, never the document's content or an address resolved.
type cimdError struct{ msg string }

func (e *cimdError) Error() string { return e.msg }

func cimdErrorf(format string, a ...any) error { return &cimdError{fmt.Sprintf(format, a...)} }

// IsCIMD reports whether a client_id is a Client ID Metadata Document's
// URL by its shape: an https URL (checkCIMDURL says whether a good one).
func IsCIMD(clientID string) bool { return strings.HasPrefix(clientID, "https://") }

// checkCIMDURL says what is wrong with a client_id as a metadata
// document's URL (the draft's §3): https, a host, a path other than "/",
// no dot segments, no fragment, no user, no query.
func checkCIMDURL(raw string) error {
	if len(raw) > maxClientIDLen {
		return cimdErrorf("the client_id URL is longer than %d characters", maxClientIDLen)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return cimdErrorf("a client_id URL must be an absolute https URL")
	case u.User != nil || u.Fragment != "" || strings.Contains(raw, "#"):
		return cimdErrorf("a client_id URL has no user name and no fragment")
	case u.RawQuery != "" || strings.Contains(raw, "?"):
		return cimdErrorf("a client_id URL has no query")
	case u.Path == "" || u.Path == "/":
		return cimdErrorf("a client_id URL has a path naming its metadata document")
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if seg == "." || seg == ".." {
			return cimdErrorf("a client_id URL has no . or .. path segments")
		}
	}
	return nil
}

// cimdCache fetches metadata documents and keeps them.
type cimdCache struct {
	http     *http.Client
	group    singleflight.Group
	inflight chan struct{}
	now      func() time.Time

	mu      sync.Mutex
	entries map[string]cimdEntry // guarded by mu: by client_id
}

type cimdEntry struct {
	client  access.Client
	err     error
	expires time.Time
}

func newCIMDCache(ft FetchTest) *cimdCache {
	guard := ssrf.New(ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(v4(ft.Allow)...), ssrf.WithAllowedV6Prefixes(v6(ft.Allow)...))
	dialer := &net.Dialer{Timeout: cimdTimeout, Control: guard.Safe}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial for us, past the guard
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ft.RootCAs},
		TLSHandshakeTimeout:    cimdTimeout,
		ResponseHeaderTimeout:  cimdTimeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConnsPerHost:    1,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	hc := &http.Client{Transport: tr, Timeout: cimdTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect }}
	return &cimdCache{http: hc, inflight: make(chan struct{}, cimdMaxInflight), now: time.Now, entries: map[string]cimdEntry{}}
}

var errRedirect = errors.New("redirect")

func v4(ps []netip.Prefix) []netip.Prefix {
	return slices.DeleteFunc(slices.Clone(ps), func(p netip.Prefix) bool { return !p.Addr().Is4() })
}

func v6(ps []netip.Prefix) []netip.Prefix {
	return slices.DeleteFunc(slices.Clone(ps), func(p netip.Prefix) bool { return !p.Addr().Is6() })
}

// client returns the client a metadata document at id describes, from
// the cache or fetched. Its error is a *cimdError.
func (c *cimdCache) client(ctx context.Context, id string) (access.Client, error) {
	if err := checkCIMDURL(id); err != nil {
		return access.Client{}, err
	}
	c.mu.Lock()
	e, ok := c.entries[id]
	c.mu.Unlock()
	if ok && c.now().Before(e.expires) {
		return e.client, e.err
	}
	v, _, _ := c.group.Do(id, func() (any, error) {
		e := c.fetchEntry(context.WithoutCancel(ctx), id)
		c.keep(id, e)
		return e, nil
	})
	e = v.(cimdEntry)
	return e.client, e.err
}

func (c *cimdCache) keep(id string, e cimdEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= cimdMaxCached {
		now := c.now()
		for k, old := range c.entries {
			if now.After(old.expires) || len(c.entries) >= cimdMaxCached {
				delete(c.entries, k)
			}
		}
	}
	c.entries[id] = e
}

// fetchEntry fetches and checks the document at id.
func (c *cimdCache) fetchEntry(ctx context.Context, id string) cimdEntry {
	select {
	case c.inflight <- struct{}{}:
		defer func() { <-c.inflight }()
	default:
		return cimdEntry{err: cimdErrorf("too many client metadata documents are being fetched; try again in a moment"), expires: c.now()}
	}
	body, ttl, err := c.fetch(ctx, id)
	if err != nil {
		return cimdEntry{err: err, expires: c.now().Add(cimdFailTTL)}
	}
	cl, err := parseCIMD(id, body)
	if err != nil {
		return cimdEntry{err: err, expires: c.now().Add(cimdFailTTL)}
	}
	cl.Created = c.now().UTC().Truncate(time.Second)
	return cimdEntry{client: cl, expires: c.now().Add(ttl)}
}

// fetch GETs the document: its body and how long to keep it.
func (c *cimdCache) fetch(ctx context.Context, id string) ([]byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, cimdTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, 0, cimdErrorf("the client_id URL is not a URL mcpx can fetch")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, fetchFailure(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, cimdErrorf("the client's metadata document answered HTTP %d, not 200", resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, 0, cimdErrorf("the client's metadata document is not served as application/json")
	}
	if resp.ContentLength > MaxCIMDSize {
		return nil, 0, cimdErrorf("the client's metadata document is larger than %d bytes", MaxCIMDSize)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxCIMDSize+1))
	switch {
	case err != nil:
		return nil, 0, cimdErrorf("the client's metadata document could not be read in time")
	case len(body) > MaxCIMDSize:
		return nil, 0, cimdErrorf("the client's metadata document is larger than %d bytes", MaxCIMDSize)
	}
	return body, cacheTTL(resp.Header.Values("Cache-Control")), nil
}

// fetchFailure names why a fetch failed without an address or a
// certificate's detail.
func fetchFailure(err error) error {
	var op *net.OpError
	switch {
	case errors.Is(err, errRedirect):
		return cimdErrorf("the client's metadata document answered with a redirect, which is not followed")
	case errors.Is(err, ssrf.ErrProhibitedIP), errors.Is(err, ssrf.ErrProhibitedNetwork), errors.Is(err, ssrf.ErrProhibitedPort):
		return cimdErrorf("the client_id URL's host is not a public internet address")
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return cimdErrorf("the client's metadata document did not arrive within %s", cimdTimeout)
	case errors.As(err, new(*tls.CertificateVerificationError)), errors.As(err, new(x509.UnknownAuthorityError)):
		return cimdErrorf("the client_id URL's host has no valid TLS certificate")
	case errors.As(err, &op) && op.Op == "dial":
		return cimdErrorf("the client_id URL's host could not be reached")
	}
	return cimdErrorf("the client's metadata document could not be fetched")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// cacheTTL is how long a document is kept by its Cache-Control, within
// [cimdMinTTL, cimdMaxTTL]: no-store, no-cache and a small max-age keep it
// the least, none keeps it cimdDefaultTTL.
func cacheTTL(values []string) time.Duration {
	ttl := cimdDefaultTTL
	for _, v := range values {
		for d := range strings.SplitSeq(v, ",") {
			k, val, _ := strings.Cut(strings.TrimSpace(strings.ToLower(d)), "=")
			switch k {
			case "no-store", "no-cache":
				return cimdMinTTL
			case "max-age":
				if n, err := strconv.Atoi(strings.Trim(val, `"`)); err == nil && n >= 0 {
					ttl = time.Duration(min(n, int(cimdMaxTTL/time.Second))) * time.Second
				}
			}
		}
	}
	return min(max(ttl, cimdMinTTL), cimdMaxTTL)
}

// cimdDoc is the part of a metadata document mcpx reads (RFC 7591 §2's
// client metadata).
type cimdDoc struct {
	ClientID     string   `json:"client_id"`
	Name         string   `json:"client_name"`
	Redirects    []string `json:"redirect_uris"`
	AuthMethod   string   `json:"token_endpoint_auth_method"`
	Grants       []string `json:"grant_types"`
	Responses    []string `json:"response_types"`
	Secret       *string  `json:"client_secret"`
	SecretExpiry *int64   `json:"client_secret_expires_at"`
}

// parseCIMD checks a document fetched from id (the draft's §4 and §8):
// its client_id is id exactly, it is a public client (no secret, auth
// method none), asks only for the code and refresh grants, and lists 1 to
// 8 good redirect URIs.
func parseCIMD(id string, body []byte) (access.Client, error) {
	var d cimdDoc
	if err := json.Unmarshal(body, &d); err != nil {
		return access.Client{}, cimdErrorf("the client's metadata document is not a JSON object of client metadata")
	}
	switch {
	case d.ClientID != id:
		return access.Client{}, cimdErrorf("the client's metadata document names another client_id than its own URL")
	case d.Secret != nil || d.SecretExpiry != nil:
		return access.Client{}, cimdErrorf("the client's metadata document holds a client_secret; such a document is public")
	case d.AuthMethod != "" && d.AuthMethod != "none":
		return access.Client{}, cimdErrorf("the client's metadata document asks for a token_endpoint_auth_method other than none; this server takes public clients (PKCE) only")
	case !subset(d.Grants, "authorization_code", "refresh_token"):
		return access.Client{}, cimdErrorf("the client's metadata document asks for grant_types other than authorization_code and refresh_token")
	case !subset(d.Responses, "code"):
		return access.Client{}, cimdErrorf("the client's metadata document asks for response_types other than code")
	case len(d.Redirects) == 0 || len(d.Redirects) > 8:
		return access.Client{}, cimdErrorf("the client's metadata document lists %d redirect_uris; give 1 to 8", len(d.Redirects))
	}
	for _, r := range d.Redirects {
		if len(r) > maxClientIDLen || access.CheckRedirect(r) != nil {
			return access.Client{}, cimdErrorf("the client's metadata document lists a redirect URI that is not https, or http on a loopback host")
		}
	}
	return access.Client{ID: id, Name: cleanName(d.Name), RedirectURIs: d.Redirects}, nil
}

func subset(have []string, allowed ...string) bool {
	for _, h := range have {
		if !slices.Contains(allowed, h) {
			return false
		}
	}
	return true
}

// cleanName drops control characters from a name a client gives itself
// and cuts it to 200 bytes.
func cleanName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x202e || r == 0x2066 || r == 0x2067 || r == 0x2068 || r == 0x202d {
			return -1
		}
		return r
	}, s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "")
	}
	return s
}
