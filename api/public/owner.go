package public

import "mcpx.dev/mcpx/auth/access"

// The owner's side of the face (`mcpx token ls`, `mcpx token revoke`,
// the dashboard): every OAuth client with its live tokens, and revoking
// a sign-in or a whole client.

// Clients returns every OAuth client the face knows, with its live
// tokens (none with an external issuer: its tokens are not kept here).
func (f *Face) Clients() []access.ClientTokens { return f.tokens.Clients() }

// External is the external issuer's identifier; "" = the embedded
// authorization server.
func (f *Face) External() string {
	if f.ext == nil {
		return ""
	}
	return f.ext.o.URL
}

// Revoke revokes, by id, an access or refresh token with its whole
// sign-in, or a client with every token it holds, its registration, and
// its authorizations still waiting or not yet exchanged: its next call
// is refused 401 and its refresh invalid_grant. The error is
// access.ErrNoSuchID for an id that is neither.
func (f *Face) Revoke(id string) (access.Revoked, error) {
	f.authz.forget(id)
	r, err := f.tokens.RevokeID(id)
	if err == nil {
		f.log.Info("oauth revoked by the owner", "client", r.Client, "token", r.Token, "tokens", r.Tokens)
	}
	return r, err
}

// forget drops the waiting authorizations and unexchanged codes of client.
func (a *authz) forget(client string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, p := range a.pending {
		if p.client.ID == client {
			delete(a.pending, id)
		}
	}
	for h, is := range a.codes {
		if is.p.client.ID == client {
			delete(a.codes, h)
		}
	}
}
