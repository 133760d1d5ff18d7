package client

import (
	"context"

	"mcpx.dev/mcpx/wire"
)

// ConfigSources returns the config chain of cl's cwd and which file defines
// each server it is served (`mcpx config --sources`).
func (c *Client) ConfigSources(ctx context.Context, cl Caller) (*wire.ConfigSources, []byte, error) {
	return get[wire.ConfigSources](ctx, c, wire.OpConfigSources, &cl, "")
}
