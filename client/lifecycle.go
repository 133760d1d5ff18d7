package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"mcpx.dev/mcpx/wire"
)

// RestartServer drains and replaces every instance of server (admin).
// raw is the daemon's document, for `--json`.
func (c *Client) RestartServer(ctx context.Context, server string) (doc *wire.Restarted, raw []byte, err error) {
	return postDoc[wire.Restarted](ctx, c, wire.OpRestartServer, "", server)
}

// Refresh drops the schema cache of server ("" = every server) and lists
// the tools of its running children again (admin).
func (c *Client) Refresh(ctx context.Context, server string) (doc *wire.Refreshed, raw []byte, err error) {
	q := ""
	if server != "" {
		q = "?" + url.Values{wire.QueryServer: {server}}.Encode()
	}
	return postDoc[wire.Refreshed](ctx, c, wire.OpRefresh, q)
}

// StopDaemonNow asks the daemon to stop without draining: every child is
// stopped at once, cutting the calls in flight. It returns once the
// daemon has answered.
func (c *Client) StopDaemonNow(ctx context.Context) error {
	resp, err := c.send(ctx, wire.OpStopDaemon, nil, nil, nil, "?"+wire.QueryForce+"=true")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// postDoc makes the bodiless POST of op and decodes its JSON document.
func postDoc[T any](ctx context.Context, c *Client, op, query string, params ...string) (*T, []byte, error) {
	raw, err := readRaw(c.send(ctx, op, nil, nil, nil, query, params...))
	if err != nil {
		return nil, nil, err
	}
	var doc T
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, fmt.Errorf("decoding the broker's answer: %w", err)
	}
	return &doc, raw, nil
}
