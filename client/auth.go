package client

import (
	"context"

	"mcpx.dev/mcpx/wire"
)

// AuthLogin begins signing in to a url server for a browser sent back to
// redirectURI (the caller's loopback listener): the authorization URL to
// open (docs/oauth.md).
func (c *Client) AuthLogin(ctx context.Context, server, redirectURI string) (*wire.AuthLogin, error) {
	return sendJSON[wire.AuthLogin](ctx, c, wire.OpAuthLogin, wire.AuthLoginRequest{RedirectURI: redirectURI}, server)
}

// AuthCallback hands the daemon the authorization response the browser
// brought back, completing the sign-in AuthLogin began.
func (c *Client) AuthCallback(ctx context.Context, server string, cb wire.AuthCallback) (*wire.AuthStatus, error) {
	return sendJSON[wire.AuthStatus](ctx, c, wire.OpAuthCallback, cb, server)
}

// AuthStatus lists the sign-ins of the url servers the caller may use.
func (c *Client) AuthStatus(ctx context.Context) (*wire.AuthStatusList, []byte, error) {
	return get[wire.AuthStatusList](ctx, c, wire.OpAuthStatus, nil, "")
}

// AuthLogout signs out of a url server, revoking its tokens where the
// authorization server offers revocation.
func (c *Client) AuthLogout(ctx context.Context, server string) (*wire.AuthLogout, error) {
	doc, _, err := postDoc[wire.AuthLogout](ctx, c, wire.OpAuthLogout, "", server)
	return doc, err
}
