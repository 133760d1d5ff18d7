package client

import (
	"context"
	"encoding/json"

	"mcpx.dev/mcpx/wire"
)

// ApprovePublic approves or denies an OAuth client's sign-in on the
// daemon's public face by the code its page shows (the owner, on the unix
// socket).
func (c *Client) ApprovePublic(ctx context.Context, req wire.PublicApprove) (*wire.PublicApproved, []byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	return sendDoc[wire.PublicApproved](ctx, c, wire.OpApprovePublic, nil, body, "")
}
