package oauth

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configure a Client. The zero value keeps sign-ins in memory only.
type Options struct {
	// Dir is where sign-ins are kept, one file per server (0600, in a
	// 0700 directory); "" = in memory only.
	Dir string
	// HTTPClient makes discovery, registration, token, refresh and
	// revocation requests; nil = a client with a 30 s timeout.
	HTTPClient *http.Client
	Logger     *slog.Logger     // nil = discard; never given a token, code, verifier or secret
	Now        func() time.Time // nil = time.Now
	// ClientName is the client_name of a dynamic registration; "" = "mcpx".
	ClientName string
	// OnEvent, if set, is told what happens to a server's sign-in: kind
	// is one of the Event* constants, reason says what (never a secret).
	// It is called with no lock held and must not block.
	OnEvent func(server, kind, reason string)
}

// Event kinds of Options.OnEvent.
const (
	EventRequired  = "required"  // the server needs sign-in
	EventSignedIn  = "signed-in" // signed in (or a client-credentials token)
	EventRefreshed = "refreshed" // the access token was refreshed
	EventFailed    = "failed"    // a sign-in or a refresh failed
)

func (c *Client) event(w who, kind, reason string) {
	if c.opts.OnEvent == nil {
		return
	}
	if w.account != "" {
		reason = strings.TrimSuffix("caller "+w.account+": "+reason, ": ")
	}
	c.opts.OnEvent(w.server, kind, reason)
}

// who names one sign-in: a server, and the caller it is for when the
// server is PerCaller ("" = the server's own sign-in: the owner's, which
// every caller uses when it is not PerCaller).
type who struct{ server, account string }

// attrs are w's log attributes (a caller is named, never a secret).
func (w who) attrs(more ...any) []any {
	a := []any{"server", w.server}
	if w.account != "" {
		a = append(a, "caller", w.account)
	}
	return append(a, more...)
}

// whoLocked is the sign-in a request of account to server uses: account's
// own where the server is PerCaller, else the server's.
func (c *Client) whoLocked(server, account string) who {
	if !c.servers[server].PerCaller {
		account = ""
	}
	return who{server, account}
}

// Server is how one url server is signed in to, from the config.
type Server struct {
	URL string // the MCP endpoint
	// ClientID and ClientSecret are a client registered with the server's
	// authorization server in advance (the secret already read from the
	// environment); "" = none.
	ClientID, ClientSecret string
	// ClientMetadataURL is mcpx's Client ID Metadata Document, used as the
	// client id where the authorization server supports them; "" = none.
	ClientMetadataURL string
	// Grant is GrantClientCredentials for a machine-to-machine server: no
	// sign-in, tokens from ClientID and ClientSecret or PrivateKey; "" =
	// the authorization code grant, a person signing in.
	Grant string
	// PrivateKey (PEM) signs a JWT client assertion (private_key_jwt)
	// with SigningAlgorithm ("" = ES256 or RS256, by the key) instead of
	// sending ClientSecret.
	PrivateKey, SigningAlgorithm string
	// PerCaller makes each caller (an account: Transport, Begin, …) sign
	// in for themselves, their tokens in a file of their own; false = one
	// sign-in for the server, whatever account is named.
	PerCaller bool
}

// Client is mcpx's OAuth 2.1 client of url servers: it signs in (Begin,
// Complete), keeps the tokens (a store in Options.Dir), authorizes
// requests (Transport), refreshes, and signs out (Logout). It is safe for
// concurrent use.
type Client struct {
	opts Options
	st   store
	log  *slog.Logger
	hc   *http.Client

	mu      sync.Mutex
	servers map[string]Server    // guarded by mu; from the config
	states  map[who]*serverState // guarded by mu; by server and caller
	pending map[string]*pending  // guarded by mu; sign-ins begun, by state
}

// serverState is what the client knows of one server beyond its record.
type serverState struct {
	loaded bool
	rec    *record // nil = not signed in

	// needs is why the server needs a sign-in, once a request found out;
	// every request fails with it at once until a sign-in clears it.
	needs *RequiredError
	// challenge is the last 401 or 403 challenge the server sent.
	challenge Challenge
	// stepUps counts the step-ups asked for per scope set (sorted, joined).
	stepUps map[string]int

	refresh sync.Mutex // one refresh at a time
}

// maxStepUps bounds the sign-ins asked for one set of scopes a server's
// 403 insufficient_scope names: after that, its 403 is the call's answer.
const maxStepUps = 2

// pendingTTL bounds how long a sign-in begun may be completed.
const pendingTTL = 10 * time.Minute

// New returns a client. It reads no file until a server is used.
func New(opts Options) *Client {
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{opts: opts, st: store{dir: opts.Dir}, log: log, hc: hc,
		servers: map[string]Server{}, states: map[who]*serverState{}, pending: map[string]*pending{}}
}

func (c *Client) now() time.Time {
	if c.opts.Now != nil {
		return c.opts.Now()
	}
	return time.Now()
}

// SetServers replaces the url servers the client signs in to, by name.
// A server whose URL changed forgets what a request found out about it;
// its stored sign-in is kept on disk but not used while the URLs differ.
func (c *Client) SetServers(servers map[string]Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w, s := range c.states {
		if servers[w.server].URL != c.servers[w.server].URL {
			s.needs, s.challenge, s.stepUps, s.loaded, s.rec = nil, Challenge{}, nil, false, nil
		}
	}
	c.servers = servers
}

// Known reports whether server is one of SetServers'.
func (c *Client) Known(server string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.servers[server]
	return ok
}

// PerCaller reports whether server's callers sign in for themselves.
func (c *Client) PerCaller(server string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[server].PerCaller
}

// stateLocked returns w's state, loading its record once.
func (c *Client) stateLocked(w who) *serverState {
	s := c.states[w]
	if s == nil {
		s = &serverState{}
		c.states[w] = s
	}
	if !s.loaded {
		s.loaded = true
		rec, err := c.st.load(w)
		if err != nil {
			c.log.Warn("oauth: unreadable sign-in; sign in again", w.attrs("err", err)...)
		}
		if rec != nil && rec.URL != c.servers[w.server].URL {
			rec = nil // signed in to another URL under this name
		}
		s.rec = rec
	}
	return s
}

// Required returns why server needs a sign-in (account's, where it is
// PerCaller) before any call, if a request found out that it does; nil
// otherwise.
func (c *Client) Required(server, account string) *RequiredError {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.servers[server]; !ok {
		return nil
	}
	return c.stateLocked(c.whoLocked(server, account)).needs
}

// Pending names the sign-in Begin returned state for, while it may be
// completed: its server and account, for an authorization response that
// comes back to the daemon itself (a browser's redirect) and names
// nothing but the state.
func (c *Client) Pending(state string) (server, account string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[state]
	if p == nil || c.now().After(p.expires) {
		return "", "", false
	}
	return p.who.server, p.who.account, true
}

// RequiredError says a url server needs a sign-in: no call reaches it
// until someone runs `mcpx auth login <Server>`.
type RequiredError struct {
	Server  string
	Account string // whose sign-in, on a PerCaller server; "" = the server's
	// Scopes are the scopes a step-up asks for (the server's 403
	// insufficient_scope); nil otherwise.
	Scopes []string
	Reason string // what happened, caller-safe
}

func (e *RequiredError) Error() string {
	return fmt.Sprintf("server %q needs sign-in: %s; run `mcpx auth login %s`", e.Server, e.Reason, e.Server)
}

// require records that server needs a sign-in, for reason, and returns
// the error every request gets until one.
func (c *Client) require(w who, reason string, ch Challenge, scopes []string) *RequiredError {
	c.mu.Lock()
	s := c.stateLocked(w)
	if ch.ResourceMetadata != "" || len(ch.Scopes) > 0 || ch.Error != "" {
		s.challenge = ch
	}
	first := s.needs == nil
	s.needs = &RequiredError{Server: w.server, Account: w.account, Scopes: scopes, Reason: reason}
	e := s.needs
	c.mu.Unlock()
	if first {
		c.log.Info("oauth: server needs sign-in", w.attrs("reason", reason)...)
		c.event(w, EventRequired, reason)
	}
	return e
}

// stepUp decides what a 403 insufficient_scope asking for ch.Scopes
// becomes: a RequiredError while fewer than maxStepUps were asked for the
// same scopes, else nil (the 403 is the answer).
func (c *Client) stepUp(w who, ch Challenge) *RequiredError {
	key := strings.Join(slices.Sorted(slices.Values(ch.Scopes)), " ")
	c.mu.Lock()
	s := c.stateLocked(w)
	if s.stepUps == nil {
		s.stepUps = map[string]int{}
	}
	s.stepUps[key]++
	n := s.stepUps[key]
	c.mu.Unlock()
	if n > maxStepUps {
		c.log.Warn("oauth: the server still refuses after step-up sign-ins", w.attrs("scopes", key, "stepUps", maxStepUps)...)
		return nil
	}
	return c.require(w, fmt.Sprintf("the server asks for more scopes (%s)", cmp.Or(key, "unnamed")), ch, ch.Scopes)
}

// Status is what `mcpx auth status` shows of one server. It holds no
// secret.
type Status struct {
	Server      string
	Account     string // the caller's, on a PerCaller server; "" = the server's sign-in
	URL         string
	SignedIn    bool      // tokens are stored
	NeedsSignIn bool      // a request found the server needs (another) sign-in
	Reason      string    // why, when NeedsSignIn
	Issuer      string    // the authorization server
	Client      string    // how mcpx identified itself: configured, metadata-document, registered
	Scopes      []string  // granted
	Expiry      time.Time // the access token's; zero = not said
	Refresh     bool      // a refresh token is stored
	SignedInAt  time.Time
}

// Status returns server's status (account's sign-in, where it is
// PerCaller); ok is false if it is not a url server the client knows.
func (c *Client) Status(server, account string) (st Status, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	srv, ok := c.servers[server]
	if !ok {
		return Status{}, false
	}
	w := c.whoLocked(server, account)
	s := c.stateLocked(w)
	st = Status{Server: server, Account: w.account, URL: srv.URL}
	if s.needs != nil {
		st.NeedsSignIn, st.Reason = true, s.needs.Reason
	}
	if r := s.rec; r != nil && r.AccessToken != "" {
		st.SignedIn, st.Issuer, st.Client, st.Scopes = true, r.Issuer, r.Client.Kind, slices.Clone(r.Scopes)
		st.Expiry, st.Refresh, st.SignedInAt = r.Expiry, r.RefreshToken != "", r.SignedIn
	}
	return st, true
}

// Accounts returns the callers with a sign-in of their own to server, a
// PerCaller server, sorted: those stored, and those signed in or asked to
// since the client started.
func (c *Client) Accounts(server string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.servers[server].PerCaller {
		return nil
	}
	seen := map[string]bool{}
	for _, a := range c.st.accounts(server) {
		seen[a] = true
	}
	for w, s := range c.states {
		if w.server == server && w.account != "" && (s.rec != nil || s.needs != nil) {
			seen[w.account] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Servers returns the names of the servers the client knows, sorted.
func (c *Client) Servers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(func(yield func(string) bool) {
		for name := range c.servers {
			if !yield(name) {
				return
			}
		}
	})
}
