package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/wire"
)

// Calls follows the tool calls as they finish (GET /v1/calls), until ctx
// ends, fn fails (its error is returned) or the daemon goes away (nil).
// session "" follows every call (admin); else only that session's, by its
// key or its name, which its creator may follow too. A call's Dropped
// counts those left out before it because the reader fell behind.
func (c *Client) Calls(ctx context.Context, session string, fn func(wire.CallFinished) error) error {
	query := ""
	if session != "" {
		query = "?" + url.Values{wire.QuerySession: {session}}.Encode()
	}
	resp, err := c.send(ctx, wire.OpCallFeed, nil, nil, http.Header{"Accept": {wire.MediaEventStream}}, query)
	if err != nil {
		return err
	}
	return readStream(ctx, resp, 1<<20, "the call feed", func(ev sse.Event) error {
		if ev.Event != wire.EventCall {
			return nil
		}
		var doc wire.CallFinished
		if err := json.Unmarshal(ev.Data, &doc); err != nil {
			return fmt.Errorf("undecodable call event: %s", ev.Data)
		}
		return fn(doc)
	})
}
