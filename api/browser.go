package api

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzhttp"

	"mcpx.dev/mcpx/api/dashboard"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// Browser sessions: the dashboard (package dashboard) signs in once with a
// token and then uses the API with a cookie and a CSRF secret instead of a
// bearer token (docs/trust.md, the dashboard):
//
//   - POST /login takes {"token": "..."} as JSON with the Mcpx-Client
//     header (a cross-site form can send neither) and an Origin, if any,
//     of this listener's own origin. The token is checked as a bearer token
//     would be; an empty one, on an Identify listener (the tailnet), signs in
//     as the caller the listener names. The answer sets an HttpOnly,
//     SameSite=Strict cookie holding a random session id and returns a
//     random CSRF secret, which the page keeps in its origin's storage.
//   - An API request with the cookie must send the secret as Mcpx-Csrf, and
//     may carry an Origin only if it is this listener's own. The browser
//     guard's other rule stays: the Host must name the listener (DNS
//     rebinding). Each such request is authenticated anew with the token
//     kept server-side, so a revoked or expired signed token ends the
//     session at once.
//   - The pages and their scripts need the cookie only (a navigation cannot
//     send a header) and hold no data; the sign-in page and what it loads
//     need nothing.
//
// Cookies are not isolated by port, so another daemon on this host may see
// the cookie; without the secret, which lives in this origin's storage, it
// is worth nothing.

// browserSessionTTL bounds a browser session; signing in again starts a new one.
const browserSessionTTL = 12 * time.Hour

// maxBrowserSessions bounds the sessions kept; a new one beyond it ends the
// one that expires first.
const maxBrowserSessions = 64

// maxLoginBody bounds a sign-in request: a token and a little JSON.
const maxLoginBody = 16 << 10

type browserSession struct {
	csrf    string // the secret the page sends as Mcpx-Csrf
	authz   string // the Authorization value it stands for; "" = the listener's Identify
	host    string // the Host it was made on: a cookie is good for that name only
	expires time.Time
}

// browserSessions are the signed-in browsers, by the SHA-256 of their
// session id (a lookup by hash cannot leak the id by its timing).
type browserSessions struct {
	mu sync.Mutex
	m  map[[32]byte]*browserSession // guarded by mu
}

func newBrowserSessions() *browserSessions {
	return &browserSessions{m: map[[32]byte]*browserSession{}}
}

func randomHex() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// add makes a session and returns its id.
func (bs *browserSessions) add(sess *browserSession, now time.Time) string {
	id := randomHex()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	var first [32]byte
	var firstExp time.Time
	for k, v := range bs.m {
		if !now.Before(v.expires) {
			delete(bs.m, k)
		} else if firstExp.IsZero() || v.expires.Before(firstExp) {
			first, firstExp = k, v.expires
		}
	}
	if len(bs.m) >= maxBrowserSessions {
		delete(bs.m, first)
	}
	bs.m[sha256.Sum256([]byte(id))] = sess
	return id
}

func (bs *browserSessions) get(id string, now time.Time) (*browserSession, bool) {
	k := sha256.Sum256([]byte(id))
	bs.mu.Lock()
	defer bs.mu.Unlock()
	sess, ok := bs.m[k]
	if ok && !now.Before(sess.expires) {
		delete(bs.m, k)
		return nil, false
	}
	return sess, ok
}

func (bs *browserSessions) remove(id string) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	delete(bs.m, sha256.Sum256([]byte(id)))
}

// cookieName is the session cookie's name on r's listener. Cookies are
// shared by every port of a host, so the port is in the name: two daemons
// on one machine do not sign each other's browser out.
func cookieName(r *http.Request) string {
	name := "mcpx_session"
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		name += "_" + port
	}
	return name
}

// ownOrigin is the origin a page of r's listener has.
func ownOrigin(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// sameOrigin reports whether r carries no Origin or this listener's own.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || strings.EqualFold(o, ownOrigin(r))
}

// networkListener returns what Serve says of r's listener and whether the
// request may be served there at all: a loopback listener serves loopback
// peers only, and every network listener only its own Host names.
func networkListener(r *http.Request) (lo listenerOpts, remote bool, err error) {
	lo, remote = r.Context().Value(identifyKey{}).(listenerOpts)
	remote = remote && lo.identify != nil
	if !remote {
		ap, perr := netip.ParseAddrPort(r.RemoteAddr)
		if perr != nil || !ap.Addr().Unmap().IsLoopback() {
			return lo, false, deny(denyNotLoopback, forbidden("only local callers are served: connect over the unix socket or a loopback address"))
		}
		lo.host = loopbackHost
	}
	if lo.host != nil && !lo.host(r.Host) {
		return lo, remote, deny(denyHost, forbidden("host "+quote(r.Host)+" is not a name of this broker"))
	}
	return lo, remote, nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sessionCaller authenticates an API request that carries a session cookie.
func (s *server) sessionCaller(r *http.Request, lo listenerOpts, remote bool, id string) (broker.Caller, error) {
	sess, err := s.sessionFor(r, id)
	if err != nil {
		return broker.Caller{}, err
	}
	return s.credentialCaller(r, lo, remote, sess.authz)
}

// sessionFor returns the live session of id if r proves it comes from that
// session's page: the Host it was made on, no foreign Origin, and its CSRF
// secret.
func (s *server) sessionFor(r *http.Request, id string) (*browserSession, error) {
	if !sameOrigin(r) {
		return nil, forbidden("requests from other web pages are refused (the Origin is not this broker's)")
	}
	sess, ok := s.browser.get(id, time.Now())
	if !ok || sess.host != r.Host {
		return nil, unauthorized("the browser session has ended", "sign in again at /login")
	}
	got := r.Header.Get(wire.HeaderCSRF)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
		return nil, &broker.Error{Kind: broker.KindForbidden, Op: "authenticate", Field: wire.HeaderCSRF,
			Msg:  "a request with the dashboard's session cookie must send its " + wire.HeaderCSRF + " secret",
			Hint: "use the dashboard's pages, or sign in again at /login"}
	}
	return sess, nil
}

// servePages serves the dashboard's pages, their assets, and signing in
// and out (compressed: the Redoc bundle is 2 MB); every other path goes to
// api.
func (s *server) servePages(api http.Handler) http.Handler {
	wrap, err := gzhttp.NewWrapper(gzhttp.ContentTypes([]string{"text/html", "text/javascript", "text/css", wire.MediaJSON}))
	if err != nil {
		panic(err) // the options above are constant and valid
	}
	pages := wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, _ := dashboard.Page(r.URL.Path)
		asset, isAsset := dashboard.Asset(r.URL.Path)
		if err := s.page(w, r, page, asset, isAsset); err != nil {
			s.challenge(w, r, err)
			s.writeProblem(w, r, err)
		}
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, isPage := dashboard.Page(r.URL.Path)
		_, isAsset := dashboard.Asset(r.URL.Path)
		if !isPage && !isAsset && r.URL.Path != logoutPath {
			api.ServeHTTP(w, r)
			return
		}
		pages.ServeHTTP(w, r)
	})
}

const (
	loginPath  = "/login"
	logoutPath = "/logout"
)

func (s *server) page(w http.ResponseWriter, r *http.Request, page, asset string, isAsset bool) error {
	if _, unix := peerFrom(r.Context()); unix {
		return &broker.Error{Kind: broker.KindNotFound, Op: "dashboard",
			Msg: "the dashboard is served on the TCP and tailnet listeners, not the unix socket", Hint: "open the daemon's URL (`mcpx daemon info`) in a browser"}
	}
	lo, remote, err := networkListener(r)
	if err != nil {
		return err
	}
	if !sameOrigin(r) {
		return forbidden("requests from other web pages are refused (the Origin is not this broker's)")
	}
	for k, v := range dashboard.Headers {
		w.Header().Set(k, v)
	}
	switch {
	case r.URL.Path == loginPath && r.Method == http.MethodPost:
		return s.login(w, r, lo, remote)
	case r.URL.Path == logoutPath:
		return s.logout(w, r)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		return errMethodNotAllowed
	}
	name := page
	if isAsset {
		name = asset
	}
	public := r.URL.Path == loginPath || dashboard.Public(name)
	if !public && !s.signedIn(r) {
		if isAsset {
			return unauthorized("the dashboard's files are served to a signed-in browser", "sign in at /login")
		}
		http.Redirect(w, r, loginPath+"?next="+r.URL.Path, http.StatusSeeOther)
		return nil
	}
	w.Header().Set("ETag", dashboard.ETag(name))
	http.ServeFileFS(w, r, dashboard.Files(), name) // answers 304 to a matching If-None-Match
	return nil
}

// signedIn reports whether r carries the cookie of a live session made on
// this Host. Pages need no more: they hold no data, and everything they
// read needs the CSRF secret too.
func (s *server) signedIn(r *http.Request) bool {
	c, err := r.Cookie(cookieName(r))
	if err != nil {
		return false
	}
	sess, ok := s.browser.get(c.Value, time.Now())
	return ok && sess.host == r.Host
}

// loginRequest is POST /login's body.
type loginRequest struct {
	Token string `json:"token"`
}

// loginAnswer is what a successful sign-in returns (with the cookie).
type loginAnswer struct {
	CSRF    string      `json:"csrf"`
	Caller  wire.Caller `json:"caller"`
	Expires time.Time   `json:"expires"`
}

func (s *server) login(w http.ResponseWriter, r *http.Request, lo listenerOpts, remote bool) error {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != wire.MediaJSON || r.Header.Get(wire.HeaderClient) == "" {
		return &broker.Error{Kind: broker.KindForbidden, Op: "sign in", Field: wire.HeaderClient,
			Msg:  "signing in takes a JSON body and the " + wire.HeaderClient + " header (a cross-site form can send neither)",
			Hint: "sign in from the page at /login"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLoginBody))
	var req loginRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		return &broker.Error{Kind: broker.KindBadRequest, Op: "sign in", Field: "token",
			Msg: `the body must be {"token": "<token>"}`, Hint: "sign in from the page at /login"}
	}
	var authz string
	if tok := strings.TrimSpace(req.Token); tok != "" {
		authz = "Bearer " + tok
	} else if !remote {
		return unauthorized("a token is required to sign in on loopback TCP",
			"paste the daemon's token (`mcpx daemon info`) or a token from `mcpx token mint`")
	}
	c, err := s.credentialCaller(r, lo, remote, authz)
	if err != nil {
		return err
	}
	now := time.Now()
	sess := &browserSession{csrf: randomHex(), authz: authz, host: r.Host, expires: now.Add(browserSessionTTL)}
	id := s.browser.add(sess, now)
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(browserSessionTTL / time.Second)})
	s.log.Info("browser signed in", "caller", c.Name, "via", c.Via, "host", r.Host)
	w.Header().Set("Content-Type", wire.MediaJSON)
	return json.NewEncoder(w).Encode(loginAnswer{CSRF: sess.csrf, Caller: callerDoc(c), Expires: sess.expires})
}

// logout ends the session of a request that proves it is the page's (the
// cookie and the CSRF secret): a cross-site page cannot sign a user out.
func (s *server) logout(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return errMethodNotAllowed
	}
	ck, err := r.Cookie(cookieName(r))
	if err != nil {
		return unauthorized("no browser session to end", "sign in at /login")
	}
	if _, err := s.sessionFor(r, ck.Value); err != nil {
		return err
	}
	s.browser.remove(ck.Value)
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
	return nil
}
