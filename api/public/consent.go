package public

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"sync"
	"time"

	"mcpx.dev/mcpx/auth/access"
)

// Consent on the tailnet (docs/public.md, "Signing in: who approves"): the
// authorization page links to a consent page the daemon serves on its
// tailnet listener only (package api), where a browser on a tailnet
// machine is named by WhoIs. The person there sees the client's name and
// the host it returns to and chooses the servers, roots and lifetime to
// give it, within their own grant; api checks the choice and calls
// Consent. The page's address carries a consent id: an HMAC of the
// pending authorization's id under a key of this process, so neither the
// tailnet page nor its logs ever see the id the authorization page polls
// with. The form carries a CSRF token bound to that authorization and to
// the person's identity, good once. A token a tailnet identity approved
// records it and the address of its machine (access.Grant.ApproverNode),
// and is checked at every use by the face's ApproverCheck: once the
// tailnet no longer gives that person the token's rights, the token and
// its whole sign-in are revoked.

// ConsentPath is the consent page's path on the tailnet listener.
const ConsentPath = "/oauth/consent"

const (
	csrfTTL  = pendingTTL // a consent form is good while its authorization waits
	maxCSRF  = 256        // consent forms open at once; a new one beyond ends the oldest
	csrfSize = 32
)

// ApproverCheck says whether the tailnet still gives tok's approver, at
// tok.ApproverNode, the rights tok carries. ErrApproverGone (wrapped) is a
// definite no: the token's sign-in is revoked. Any other error refuses the
// token this once (the tailnet could not be asked).
type ApproverCheck func(ctx context.Context, tok access.Token) error

// ErrApproverGone is an ApproverCheck's answer when the approver no longer
// has the token's rights.
var ErrApproverGone = errors.New("the person who approved this sign-in no longer has the rights it carries on the tailnet")

// Errors of ConsentRequest and Consent. None names a secret.
var (
	ErrNoConsent = errors.New("this sign-in has expired, was already decided, or was never asked for: start again from your client")
	ErrCSRF      = errors.New("this consent form is stale or was not this page's (each form is good once, for the person it was shown to): reload the consent page and choose again")
)

type csrfTicket struct {
	consent, who string
	expires      time.Time
}

// consent is the face's consent state.
type consent struct {
	key []byte // HMAC key of consent ids

	mu    sync.Mutex
	page  string                // guarded by mu: the consent page's URL, "" = none
	check ApproverCheck         // guarded by mu
	csrf  map[string]csrfTicket // guarded by mu: by sha of the token
}

func newConsent() *consent {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand)
	return &consent{key: key, csrf: map[string]csrfTicket{}}
}

// SetConsentPage makes the authorization page link to the tailnet consent
// page at pageURL (http://<node>.<tailnet>.ts.net/oauth/consent); "" = no
// link, approval by code only.
func (f *Face) SetConsentPage(pageURL string) {
	f.consent.mu.Lock()
	defer f.consent.mu.Unlock()
	f.consent.page = pageURL
}

// SetApproverCheck sets how a token a tailnet identity approved is checked
// at each use. Without one, such a token is refused.
func (f *Face) SetApproverCheck(check ApproverCheck) {
	f.consent.mu.Lock()
	defer f.consent.mu.Unlock()
	f.consent.check = check
}

// consentID is the consent id of the pending authorization of id.
func (c *consent) consentID(id string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// consentLink is the consent page's address for p; "" = none.
func (f *Face) consentLink(p *pending) string {
	f.consent.mu.Lock()
	page := f.consent.page
	f.consent.mu.Unlock()
	if page == "" {
		return ""
	}
	return page + "?id=" + url.QueryEscape(f.consent.consentID(p.id))
}

// undecided returns the undecided, live authorization of consent id cid.
// The caller holds f.authz.mu.
func (f *Face) undecidedLocked(cid string) (*pending, bool) {
	now := time.Now()
	for _, p := range f.authz.pending {
		if hmac.Equal([]byte(f.consent.consentID(p.id)), []byte(cid)) {
			ok := p.approved == nil && !p.denied && now.Before(p.expires)
			return p, ok
		}
	}
	return nil, false
}

// ConsentRequest describes the authorization of consent id cid to who (a
// tailnet identity), with a CSRF token for the form that decides it: bound
// to that authorization and to who, good once.
func (f *Face) ConsentRequest(cid, who string) (Pending, string, error) {
	f.authz.mu.Lock()
	p, ok := f.undecidedLocked(cid)
	var desc Pending
	if ok {
		desc = describe(p)
	}
	f.authz.mu.Unlock()
	if !ok || who == "" {
		return Pending{}, "", ErrNoConsent
	}
	token := randomString(csrfSize)
	c := f.consent
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	var first string
	for k, t := range c.csrf {
		if now.After(t.expires) {
			delete(c.csrf, k)
		} else if first == "" || t.expires.Before(c.csrf[first].expires) {
			first = k
		}
	}
	if len(c.csrf) >= maxCSRF {
		delete(c.csrf, first) // the oldest form goes stale: reloading a page makes a new one
	}
	c.csrf[sha(token)] = csrfTicket{consent: cid, who: who, expires: now.Add(csrfTTL)}
	return desc, token, nil
}

// Consent decides the authorization of consent id cid as who, with the
// CSRF token its form carried, by what choose answers once the token is
// checked: an approval, or nil to deny the client. The token is spent
// whatever the outcome (an error of choose leaves the authorization
// waiting, for a new form). It returns what was decided and the address
// the browser goes back to, where the authorization page sends it on to
// the client.
func (f *Face) Consent(cid, who, csrf string, choose func() (*Approval, error)) (Pending, string, error) {
	if err := f.consent.spend(cid, who, csrf); err != nil {
		return Pending{}, "", err
	}
	a, err := choose()
	if err != nil {
		return Pending{}, "", err
	}
	f.authz.mu.Lock()
	defer f.authz.mu.Unlock()
	p, ok := f.undecidedLocked(cid)
	if !ok {
		return Pending{}, "", ErrNoConsent
	}
	if a == nil {
		p.denied = true
	} else {
		p.approved = a
	}
	return describe(p), f.origin + waitPath + "?id=" + url.QueryEscape(p.id), nil
}

// spend checks and removes the CSRF token of a consent form.
func (c *consent) spend(cid, who, token string) error {
	if token == "" {
		return ErrCSRF
	}
	c.mu.Lock()
	t, ok := c.csrf[sha(token)]
	delete(c.csrf, sha(token))
	c.mu.Unlock()
	if !ok || time.Now().After(t.expires) || !hmac.Equal([]byte(t.consent), []byte(cid)) || t.who != who {
		return ErrCSRF
	}
	return nil
}

func describe(p *pending) Pending {
	u, _ := url.Parse(p.redirect)
	return Pending{Client: p.client.ID, ClientName: p.clientLabel, RedirectHost: u.Host, Resource: p.resource}
}

// checkApprover refuses tok (a *Refusal) if a tailnet identity approved
// it and the tailnet no longer gives them its rights (then its sign-in is
// revoked), or cannot be asked now.
func (f *Face) checkApprover(ctx context.Context, tok access.Token) error {
	switch err := f.approverErr(ctx, tok); {
	case err == nil:
		return nil
	case errors.Is(err, ErrApproverGone):
		return f.invalid(ErrApproverGone.Error() + ": sign in again")
	}
	return f.invalid("the approval of this sign-in cannot be checked now (the daemon's tailnet is not reachable): retry later")
}

// approverErr is why tok's approver no longer admits it: ErrApproverGone
// (its sign-in is then revoked), or another error when the tailnet could
// not be asked; nil for the owner's approvals.
func (f *Face) approverErr(ctx context.Context, tok access.Token) error {
	if tok.ApproverNode == "" {
		return nil // approved by the owner, on the daemon's machine
	}
	f.consent.mu.Lock()
	check := f.consent.check
	f.consent.mu.Unlock()
	err := errors.New("no tailnet to ask about the approver")
	if check != nil {
		err = check(ctx, tok)
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrApproverGone):
		f.tokens.RevokeFamily(tok) //nolint:errcheck // refused either way
		f.log.Warn("oauth sign-in revoked: its approver's tailnet grant no longer covers it", "client", tok.Client, "approver", tok.Approver, "token", tok.ID)
	default:
		f.log.Warn("oauth token refused: its approver could not be checked on the tailnet", "client", tok.Client, "approver", tok.Approver, "err", err)
	}
	return err
}
