package api

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// The tailnet consent page (docs/public.md, "Signing in: who approves"):
// the public face's authorization page links here (public.ConsentPath),
// and the person's browser, on a tailnet machine, is named by WhoIs. They
// see the client's name and the host it returns to and choose the servers,
// roots and lifetime to give it, within their own grant: a choice outside
// it is refused, and so is anyone without a grant. The page is served on
// the tailnet listener only: the public listener answers 404 there (it
// never reaches this handler), the unix socket 404, loopback TCP 403 (no
// tailnet identity there). The form's POST needs its CSRF token (bound to
// the authorization and the identity, good once: package public), an
// Origin of this listener's own and, when the browser sends one,
// Sec-Fetch-Site same-origin. No page of it may be framed.
//
// The token the client gets records the approver and their machine's
// tailnet address; approverCheck asks the tailnet at each use whether the
// approver there still has the token's rights.

// maxConsentBody bounds the consent form.
const maxConsentBody = 16 << 10

// consentTTLs are the lifetimes the page offers; the first is the default.
var consentTTLs = []string{"24h", "1h", "8h", "168h", "720h"}

// servePublicConsent serves public.ConsentPath, before the browser guard
// (a navigation carries no Mcpx-Client), and passes every other path on.
func (s *server) servePublicConsent(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != public.ConsentPath {
			h.ServeHTTP(w, r)
			return
		}
		hdr := w.Header()
		hdr.Set("Cache-Control", "no-store")
		// No form-action: Chromium holds the form's redirects to it too, and
		// the answer sends the browser on to the public face and the client.
		hdr.Set("X-Frame-Options", "DENY")
		hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
		hdr.Set("Referrer-Policy", "same-origin") // "no-referrer" would make a form's Origin "null"
		hdr.Set("X-Content-Type-Options", "nosniff")
		c, status, err := s.consentCaller(r)
		switch {
		case err != nil:
			s.consentPage(w, status, consentView{Title: "Not here", Text: consentError(err)})
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			s.consentForm(w, r, c)
		case r.Method == http.MethodPost:
			s.consentDecide(w, r, c)
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			s.consentPage(w, http.StatusMethodNotAllowed, consentView{Title: "Not allowed", Text: "The consent page is read with GET and answered with its form."})
		}
	})
}

// consentCaller is the tailnet identity at the consent page, or why there
// is none and the status that says so.
func (s *server) consentCaller(r *http.Request) (broker.Caller, int, error) {
	if _, unix := peerFrom(r.Context()); unix {
		return broker.Caller{}, http.StatusNotFound, errors.New("the consent page is served on the tailnet only, not on the unix socket")
	}
	lo, remote, err := networkListener(r)
	switch {
	case err != nil:
		return broker.Caller{}, http.StatusForbidden, err
	case !remote:
		return broker.Caller{}, http.StatusForbidden, errors.New("the consent page is served on the tailnet only: open its link in a browser on a tailnet machine (loopback TCP names no tailnet identity; on this machine, approve the code with `mcpx auth approve`)")
	case s.public == nil:
		return broker.Caller{}, http.StatusNotFound, errors.New("this daemon serves no public face, so no sign-in waits for consent")
	}
	c, err := lo.identify(r)
	s.seen(c)
	if err != nil {
		return broker.Caller{}, http.StatusForbidden, err
	}
	if c.Via != wire.ViaTailnet || c.Name == "" {
		return broker.Caller{}, http.StatusForbidden, errors.New("the consent page needs a tailnet identity")
	}
	return c, http.StatusOK, nil
}

// consentError is what the page says of err: a broker error's message and
// hint (they name no secret), else err's text, which this file and package
// public write.
func consentError(err error) string {
	var be *broker.Error
	if errors.As(err, &be) {
		if be.Hint != "" {
			return be.Msg + ". " + be.Hint
		}
		return be.Msg
	}
	return err.Error()
}

// consentForm shows the authorization of the page's id to c, with a form
// of c's choices.
func (s *server) consentForm(w http.ResponseWriter, r *http.Request, c broker.Caller) {
	id := r.URL.Query().Get("id")
	p, csrf, err := s.public.ConsentRequest(id, c.Name)
	if err != nil {
		s.consentPage(w, http.StatusNotFound, consentView{Title: "Nothing to approve", Text: err.Error()})
		return
	}
	v := consentView{Title: "Approve " + p.ClientName, Pending: &p, Who: c.Name, ID: id, CSRF: csrf, TTLs: consentTTLs, Action: public.ConsentPath}
	for _, si := range s.b.Servers(c) {
		v.Servers = append(v.Servers, si.Name)
	}
	var roots []string
	for _, rule := range c.Rights {
		roots = append(roots, rule.Roots...)
	}
	v.Roots = strings.Join(roots, ", ")
	s.consentPage(w, http.StatusOK, v)
}

// consentDecide takes the consent form's answer.
func (s *server) consentDecide(w http.ResponseWriter, r *http.Request, c broker.Caller) {
	if err := sameOriginForm(r); err != nil {
		s.consentPage(w, http.StatusForbidden, consentView{Title: "Refused", Text: err.Error()})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxConsentBody)
	if err := r.ParseForm(); err != nil {
		s.consentPage(w, http.StatusBadRequest, consentView{Title: "Refused", Text: "the consent form could not be read"})
		return
	}
	form := r.PostForm
	id := form.Get("id")
	p, back, err := s.public.Consent(id, c.Name, form.Get("csrf"), func() (*public.Approval, error) {
		if form.Get("decision") == "deny" {
			return nil, nil
		}
		return consentApproval(c, r.RemoteAddr, form)
	})
	if err != nil {
		status := http.StatusForbidden
		if errors.Is(err, public.ErrNoConsent) {
			status = http.StatusNotFound
		}
		again := public.ConsentPath + "?id=" + url.QueryEscape(id)
		s.consentPage(w, status, consentView{Title: "Not approved", Text: consentError(err), Again: again})
		return
	}
	s.log.Info("public face sign-in decided on the tailnet", "client", p.Client, "name", p.ClientName, "redirect", p.RedirectHost,
		"approver", c.Name, "denied", form.Get("decision") == "deny")
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// sameOriginForm refuses a POST that did not come from the consent page:
// its Origin must be this listener's (the Host was checked to be one of
// the node's names), and Sec-Fetch-Site, when sent, same-origin.
func sameOriginForm(r *http.Request) error {
	o := r.Header.Get("Origin")
	if o != "http://"+r.Host && o != "https://"+r.Host {
		return errors.New("the consent form is taken from this consent page only (the request's Origin is not this server's)")
	}
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" {
		return errors.New("the consent form is taken from this consent page only (Sec-Fetch-Site is " + sfs + ")")
	}
	return nil
}

// consentApproval is the approval form asks c to give: c's rights narrowed
// to the servers, roots and lifetime chosen, never wider (approval).
func consentApproval(c broker.Caller, remote string, form url.Values) (*public.Approval, error) {
	servers := form["server"]
	if len(servers) == 0 {
		return nil, errors.New("choose at least one server to give the client")
	}
	var roots []string
	for _, root := range strings.FieldsFunc(form.Get("roots"), func(r rune) bool { return r == ',' || r == '\n' }) {
		if root = strings.TrimSpace(root); root != "" {
			roots = append(roots, root)
		}
	}
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return nil, fmt.Errorf("the tailnet address of this browser's machine cannot be read")
	}
	// The choice read and canonicalised as the owner's would be (no
	// check against rights there), then held to c's own below.
	a, err := approval(broker.Caller{Name: c.Name, Owner: true}, wire.PublicApprove{Servers: servers, Roots: roots, TTL: form.Get("ttl")})
	if err != nil {
		return nil, err
	}
	rule, err := withinGrant(c, a.Rights[0])
	if err != nil {
		return nil, err
	}
	a.Rights, a.Node = rights.Rights{rule}, ap.Addr().Unmap().String()
	return &a, nil
}

// withinGrant is the chosen rule as c's grant allows it: as chosen, or
// with the tool, scope and rate limits of one of c's rules (a grant that
// limits them gives no rule without them). Its error names what is
// outside c's grant.
func withinGrant(c broker.Caller, rule rights.Rule) (rights.Rule, error) {
	first := c.Rights.Covers(rule)
	if first == nil {
		return rule, nil
	}
	var ex *rights.Excess
	for _, g := range c.Rights {
		r := rule
		r.Tools, r.Scopes, r.Rate, r.Burst = g.Tools, g.Scopes, g.Rate, g.Burst
		err := c.Rights.Covers(r)
		if err == nil {
			return r, nil
		}
		if errors.As(err, &ex) && (ex.Field == "servers" || ex.Field == "roots") {
			first = err // what the person chose, rather than a limit they did not
		}
	}
	if errors.As(first, &ex) {
		return rights.Rule{}, fmt.Errorf("%s %s is outside your tailnet grant: give the client only servers and roots your grant gives you", ex.Field, ex.Value)
	}
	return rights.Rule{}, fmt.Errorf("the choice is outside your tailnet grant (%v): give the client only what your grant gives you", first)
}

// approverCheck is the public face's ApproverCheck: the tailnet peer at
// the token's approver address must still be the approver, with a grant
// that covers every rule of the token.
func (s *server) approverCheck(ctx context.Context, tok access.Token) error {
	if s.tailnet == nil || s.tailnet.WhoIs == nil {
		return errors.New("this daemon is not on a tailnet")
	}
	c, err := s.tailnet.WhoIs(ctx, tok.ApproverNode)
	switch {
	case c.Name != "" && c.Name != tok.Approver:
		return fmt.Errorf("%w (%s is now at its machine's address)", public.ErrApproverGone, c.Name)
	case err != nil && c.Name != "":
		return fmt.Errorf("%w: %v", public.ErrApproverGone, err) // named, with no grant
	case err != nil:
		return err // the tailnet could not tell
	}
	for _, rule := range tok.Rights {
		if within(c, rule) != nil {
			return public.ErrApproverGone
		}
	}
	return nil
}

// consentView is what the consent page shows.
type consentView struct {
	Title, Text  string
	Pending      *public.Pending
	Who, ID      string
	CSRF, Action string
	Servers      []string
	Roots        string
	TTLs         []string
	Again        string // a link back to a fresh form
}

var consentTmpl = template.Must(template.New("c").Parse(`<!doctype html><html><head><meta charset="utf-8">
<title>mcpx: {{.Title}}</title><meta name="referrer" content="same-origin"></head>
<body style="font-family:sans-serif;max-width:40em;margin:3em auto"><h1>{{.Title}}</h1>
{{with .Text}}<p id="message">{{.}}</p>{{end}}
{{with .Again}}<p><a id="again" href="{{.}}">Back to the consent page</a></p>{{end}}
{{with .Pending}}<p>The client <b id="client">{{.ClientName}}</b> asks to use this mcpx server ({{.Resource}}).
It returns to <b id="redirect-host">{{.RedirectHost}}</b>. Approve only a sign-in you started yourself.</p>
<p>You are <b id="who">{{$.Who}}</b>: the client gets at most what your tailnet grant gives you.</p>
<form method="post" action="{{$.Action}}"><input type="hidden" name="id" value="{{$.ID}}"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<fieldset><legend>Servers</legend>{{range $.Servers}}<label><input type="checkbox" name="server" value="{{.}}"> {{.}}</label><br>{{end}}</fieldset>
<p><label>Roots (absolute directories, comma-separated; empty = anywhere, if your grant allows it) <input name="roots" size="50" value="{{$.Roots}}"></label></p>
<p><label>For <select name="ttl">{{range $.TTLs}}<option value="{{.}}">{{.}}</option>{{end}}</select></label></p>
<p><button name="decision" value="approve" id="approve">Approve</button> <button name="decision" value="deny" id="deny">Deny</button></p>
</form>{{end}}</body></html>`))

func (s *server) consentPage(w http.ResponseWriter, status int, v consentView) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	consentTmpl.Execute(w, v) //nolint:errcheck // the client is gone if this fails
}
