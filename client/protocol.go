package client

import (
	"context"
	"encoding/json"

	"mcpx.dev/mcpx/wire"
)

// ResourceTemplates lists one server's resource templates.
func (c *Client) ResourceTemplates(ctx context.Context, cl Caller, server string) (*wire.ResourceTemplateList, []byte, error) {
	return get[wire.ResourceTemplateList](ctx, c, wire.OpListResourceTemplates, &cl, "", server)
}

// Complete asks the server to complete a prompt's argument or a resource
// template's variable and returns the child's CompleteResult, unchanged.
func (c *Client) Complete(ctx context.Context, cl Caller, server string, req wire.CompleteRequest) (json.RawMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return readRaw(c.send(ctx, wire.OpComplete, &cl, body, nil, "", server))
}

// SetLogLevel sends logging/setLevel (level: one of wire.MCPLogLevels) to
// the child of server in cl's scope. An instance has one level: callers
// sharing it share the last one set.
func (c *Client) SetLogLevel(ctx context.Context, cl Caller, server, level string) error {
	body, err := json.Marshal(wire.LogLevelRequest{Level: level})
	if err != nil {
		return err
	}
	resp, err := c.send(ctx, wire.OpSetLogLevel, &cl, body, nil, "", server)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
