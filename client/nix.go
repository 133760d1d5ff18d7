package client

import (
	"context"

	"mcpx.dev/mcpx/wire"
)

// Nix lists the servers whose command is a nix: spec, with what each
// resolved to, and the cache entries no server references (admin).
func (c *Client) Nix(ctx context.Context) (*wire.NixList, []byte, error) {
	return get[wire.NixList](ctx, c, wire.OpListNix, nil, "")
}

// NixRefresh resolves server's nix: command again; a changed program
// replaces its instances through the daemon's drain (admin).
func (c *Client) NixRefresh(ctx context.Context, server string) (*wire.NixRefreshed, []byte, error) {
	return get[wire.NixRefreshed](ctx, c, wire.OpRefreshNix, nil, "", server)
}

// NixGC drops the nix cache entries no server references (admin).
func (c *Client) NixGC(ctx context.Context) (*wire.NixGC, []byte, error) {
	return get[wire.NixGC](ctx, c, wire.OpGCNix, nil, "")
}
