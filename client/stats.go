package client

import (
	"context"
	"net/url"

	"mcpx.dev/mcpx/wire"
)

// CallStats returns the figures of the daemon's call log (admin): the calls
// since since (a Go duration back from now, or an RFC 3339 time; "" = all),
// grouped by by ("server", "tool", "caller"; "" = the total only).
func (c *Client) CallStats(ctx context.Context, since, by string) (*wire.CallStats, []byte, error) {
	q := url.Values{}
	if since != "" {
		q.Set(wire.QuerySince, since)
	}
	if by != "" {
		q.Set(wire.QueryBy, by)
	}
	query := ""
	if len(q) > 0 {
		query = "?" + q.Encode()
	}
	return get[wire.CallStats](ctx, c, wire.OpCallStats, nil, query)
}
