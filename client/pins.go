package client

import (
	"context"
	"encoding/json"

	"mcpx.dev/mcpx/wire"
)

// ToolPins asks GET /v1/pins: every server definition's tool pins.
func (c *Client) ToolPins(ctx context.Context) (*wire.ToolPins, []byte, error) {
	return get[wire.ToolPins](ctx, c, wire.OpListPins, nil, "")
}

// ApproveTools approves server's tool (tool "" = all its tools) as last
// listed, for the definition cl is served at its cwd; hash, if set, must
// be the tool's hash as last listed.
func (c *Client) ApproveTools(ctx context.Context, cl Caller, server, tool, hash string) (*wire.ApprovedTools, []byte, error) {
	b, err := json.Marshal(wire.ApproveTools{Tool: tool, Hash: hash})
	if err != nil {
		return nil, nil, err
	}
	return sendDoc[wire.ApprovedTools](ctx, c, wire.OpApproveTools, &cl, b, "", server)
}
