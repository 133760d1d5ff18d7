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
			srv.Grant, srv.SigningAlgorithm, srv.PerCaller = o.Grant, o.SigningAlgorithm, o.PerCaller
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
	who := "the daemon's owner signs in"
	if e.Account != "" {
		who = "each caller signs in for themselves (perCaller): sign in"
	}
	return &Error{Kind: KindAuthorizationRequired, Op: op, Server: server, Msg: msg, Err: e,
		Hint: fmt.Sprintf("%s with `mcpx auth login %s`", who, server)}
}

// signInAccount names c's own sign-in to server where it is perCaller:
// "" for the owner (whose sign-in is the server's own file) and for
// every caller of a server that is not; else the caller as callerKey
// names one, "@<via>:<name>" (a token subject and a tailnet login of the
// same name are two callers).
func (b *Broker) signInAccount(server string, c Caller) string {
	if c.Owner || !b.oauth.PerCaller(server) {
		return ""
	}
	return "@" + c.Via + ":" + c.Name
}

// mayManageSignIn: signing in to a server is the daemon's owner's (or an
// admin's), for every caller of the server; on a perCaller server, every
// caller who may use it signs in for themselves.
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
	if !c.Owner && !c.Rights.Admin() && !b.oauth.PerCaller(server) {
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
	Caller      string // whose sign-in, on a perCaller server ("@<via>:<name>"); "" = the server's own (the owner's)
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
	return AuthStatus{Server: s.Server, Caller: s.Account, SignedIn: s.SignedIn, NeedsSignIn: s.NeedsSignIn, Reason: s.Reason, Issuer: s.Issuer,
		Client: s.Client, Scopes: s.Scopes, Expiry: s.Expiry, Refresh: s.Refresh, SignedInAt: s.SignedInAt}
}

// AuthBegin begins c's sign-in to server for a browser sent back to
// redirectURI (the CLI's loopback listener): the authorization URL.
func (b *Broker) AuthBegin(ctx context.Context, c Caller, server, redirectURI string) (AuthLogin, error) {
	if err := b.mayManageSignIn(c, server); err != nil {
		return AuthLogin{}, err
	}
	l, err := b.oauth.Begin(ctx, server, b.signInAccount(server, c), redirectURI)
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
	return b.completeSignIn(ctx, server, b.signInAccount(server, c), state, code, iss)
}

// AuthStatuses returns the sign-ins of the url servers c may use, by
// name: of a perCaller server, c's own; the owner's, every caller's after
// its own.
func (b *Broker) AuthStatuses(c Caller) []AuthStatus {
	var out []AuthStatus
	for _, name := range b.oauth.Servers() {
		if !c.Rights.MayUse(name) {
			continue
		}
		if st, ok := b.oauth.Status(name, b.signInAccount(name, c)); ok {
			out = append(out, authStatus(st))
		}
		if !c.Owner {
			continue
		}
		for _, a := range b.oauth.Accounts(name) {
			if st, ok := b.oauth.Status(name, a); ok {
				out = append(out, authStatus(st))
			}
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
	revoked, err = b.oauth.Logout(ctx, server, b.signInAccount(server, c))
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
