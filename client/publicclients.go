package client

import (
	"context"
	"encoding/json"

	"mcpx.dev/mcpx/wire"
)

// PublicClients lists the public face's OAuth clients and their live
// tokens (the owner).
func (c *Client) PublicClients(ctx context.Context) (*wire.PublicClients, []byte, error) {
	return get[wire.PublicClients](ctx, c, wire.OpListPublicClients, nil, "")
}

// RevokePublic revokes an OAuth token of the public face with its
// sign-in, or a client with every token it holds, by id (the owner).
func (c *Client) RevokePublic(ctx context.Context, id string) (*wire.PublicRevoked, []byte, error) {
	body, err := json.Marshal(wire.PublicRevoke{ID: id})
	if err != nil {
		return nil, nil, err
	}
	return sendDoc[wire.PublicRevoked](ctx, c, wire.OpRevokePublic, nil, body, "")
}
