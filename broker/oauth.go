package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/mcp/oauth"
	"mcpx.dev/mcpx/pool"
)

// KindAuthorizationRequired: a url server needs a sign-in before any call
// reaches it (docs/oauth.md): `mcpx auth login <server>`.
const KindAuthorizationRequired Kind = "authorization-required"

// OAuthDir is where the sign-ins to url servers are kept, in the state
// directory (package mcp/oauth).
const OAuthDir = "oauth"

// oauthServers are the url servers of cfg that may be signed in to, with
// ${env:NAME} read from getenv: every url server but one that sends an
// Authorization header of its own, or whose URL holds a placeholder other
// than ${env:NAME} (it differs per instance).
func oauthServers(cfg *config.Config, getenv func(string) string) map[string]oauth.Server {
	out := map[string]oauth.Server{}
	for name, s := range cfg.Servers {
		if s.URL == "" || hasAuthorization(s.Headers) {
			continue
		}
		u, ok := expandEnvRefs(s.URL, getenv)
		if !ok || strings.Contains(u, "${") {
			continue
		}
		srv := oauth.Server{URL: u}
		if o := s.OAuth; o != nil {
			srv.ClientID, _ = expandEnvRefs(o.ClientID, getenv)
			srv.ClientSecret, _ = expandEnvRefs(o.ClientSecret, getenv)
			srv.ClientMetadataURL = o.ClientMetadataURL
			srv.PrivateKey, _ = expandEnvRefs(o.PrivateKey, getenv)
			srv.Grant, srv.SigningAlgorithm = o.Grant, o.SigningAlgorithm
		}
		out[name] = srv
	}
	return out
}

func hasAuthorization(h map[string]string) bool {
	for k := range h {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnvRefs replaces each ${env:NAME} of v; ok is false when one is
// unset.
func expandEnvRefs(v string, getenv func(string) string) (string, bool) {
	ok := true
	out := envRef.ReplaceAllStringFunc(v, func(m string) string {
		val := getenv(envRef.FindStringSubmatch(m)[1])
		if val == "" {
			ok = false
		}
		return val
	})
	return out, ok
}

// authRequired is e as the broker's error: every caller may read it, and
// it names the command that cures it.
func authRequired(op, server string, e *oauth.RequiredError) *Error {
	msg := "the server needs sign-in: " + e.Reason
	if len(e.Scopes) > 0 {
		msg += fmt.Sprintf(" (scopes %s)", strings.Join(e.Scopes, " "))
	}
	return &Error{Kind: KindAuthorizationRequired, Op: op, Server: server, Msg: msg, Err: e,
		Hint: fmt.Sprintf("the daemon's owner signs in with `mcpx auth login %s`", server)}
}

// mayManageSignIn: signing in, for every caller of the server, is the
// daemon's owner's (or an admin's) and only for a server they may use;
// per-caller sign-in is not built yet.
func (b *Broker) mayManageSignIn(c Caller, server string) error {
	cfg := b.currentConfig()
	if cfg.Servers[server] == nil || !c.Rights.MayUse(server) {
		return notFoundError(cfg.Servers, server, c)
	}
	if cfg.Servers[server].URL == "" {
		return &Error{Kind: KindBadRequest, Op: "sign in", Server: server, Field: "server",
			Msg: "only url servers are signed in to", Hint: "a command server takes its credentials from its env"}
	}
	if !b.oauth.Known(server) {
		return &Error{Kind: KindBadRequest, Op: "sign in", Server: server, Field: "headers",
			Msg:  "the server sends an Authorization header of its own (or its url differs per instance), so mcpx does not sign in to it",
			Hint: "remove headers.Authorization from its config to sign in instead"}
	}
	if !c.Owner && !c.Rights.Admin() {
		return &Error{Kind: KindForbidden, Op: "sign in", Server: server,
			Msg: "signing in to a server is for the daemon's owner or an admin: the sign-in serves every caller"}
	}
	return nil
}

// AuthLogin is a sign-in begun (Broker.AuthBegin).
type AuthLogin struct {
	URL     string // the authorization URL for the user's browser
	State   string
	Expires time.Time
}

// AuthStatus is one url server's sign-in, holding no secret.
type AuthStatus struct {
	Server      string
	SignedIn    bool
	NeedsSignIn bool
	Reason      string
	Issuer      string
	Client      string // configured, metadata-document, registered
	Scopes      []string
	Expiry      time.Time
	Refresh     bool
	SignedInAt  time.Time
}

func authStatus(s oauth.Status) AuthStatus {
	return AuthStatus{Server: s.Server, SignedIn: s.SignedIn, NeedsSignIn: s.NeedsSignIn, Reason: s.Reason, Issuer: s.Issuer,
		Client: s.Client, Scopes: s.Scopes, Expiry: s.Expiry, Refresh: s.Refresh, SignedInAt: s.SignedInAt}
}

// AuthBegin begins c's sign-in to server for a browser sent back to
// redirectURI (the CLI's loopback listener): the authorization URL.
func (b *Broker) AuthBegin(ctx context.Context, c Caller, server, redirectURI string) (AuthLogin, error) {
	if err := b.mayManageSignIn(c, server); err != nil {
		return AuthLogin{}, err
	}
	l, err := b.oauth.Begin(ctx, server, redirectURI)
	if err != nil {
		return AuthLogin{}, &Error{Kind: KindBadRequest, Op: "sign in", Server: server, Msg: err.Error(), Err: err}
	}
	return AuthLogin{URL: l.URL, State: l.State, Expires: l.Expires}, nil
}

// AuthComplete completes the sign-in AuthBegin began, with the
// authorization response the browser brought back.
func (b *Broker) AuthComplete(ctx context.Context, c Caller, server, state, code, iss string) (AuthStatus, error) {
	if err := b.mayManageSignIn(c, server); err != nil {
		return AuthStatus{}, err
	}
	st, err := b.oauth.Complete(ctx, server, state, code, iss)
	if err != nil {
		return AuthStatus{}, &Error{Kind: KindBadRequest, Op: "sign in", Server: server, Msg: err.Error(), Err: err}
	}
	// Starts that failed for want of a sign-in are not a crash loop: the
	// next call starts afresh, with the new tokens (pool.Restart forgets
	// the backoff).
	b.pool.Restart(servedAs(server), "signed in")
	return authStatus(st), nil
}

// AuthStatuses returns the sign-ins of the url servers c may use, by name.
func (b *Broker) AuthStatuses(c Caller) []AuthStatus {
	var out []AuthStatus
	for _, name := range b.oauth.Servers() {
		if !c.Rights.MayUse(name) {
			continue
		}
		if st, ok := b.oauth.Status(name); ok {
			out = append(out, authStatus(st))
		}
	}
	return out
}

// AuthLogout signs out of server: revoked where the authorization server
// offers revocation, deleted all the same.
func (b *Broker) AuthLogout(ctx context.Context, c Caller, server string) (revoked bool, err error) {
	if err := b.mayManageSignIn(c, server); err != nil {
		return false, err
	}
	revoked, err = b.oauth.Logout(ctx, server)
	if err != nil {
		b.log.Warn("sign-out: revocation failed; the sign-in is deleted", "server", server, "err", err)
	}
	return revoked, nil
}

// oauthEvent is the OAuth client's event as the broker's: auth-required,
// auth-signed-in, auth-refreshed, auth-failed (never a secret).
func (b *Broker) oauthEvent(server, kind, reason string) {
	k := map[string]pool.EventKind{oauth.EventRequired: pool.EventAuthRequired, oauth.EventSignedIn: pool.EventAuthSignedIn,
		oauth.EventRefreshed: pool.EventAuthRefreshed, oauth.EventFailed: pool.EventAuthFailed}[kind]
	if k == "" || b.pool == nil {
		return
	}
	b.emitEvent(pool.Event{Kind: k, Server: server, Reason: reason})
}

// oauthDir is OAuthDir in stateDir; "" = sign-ins in memory only.
func oauthDir(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Join(stateDir, OAuthDir)
}
