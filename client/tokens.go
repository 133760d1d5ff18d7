package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"mcpx.dev/mcpx/wire"
)

// Tokens lists the broker's signed tokens and keys (admin).
func (c *Client) Tokens(ctx context.Context) (*wire.TokenList, []byte, error) {
	return get[wire.TokenList](ctx, c, wire.OpListTokens, nil, "")
}

// MintToken mints a signed token with req's rights (the unix socket's
// owner, or an admin within its own rights). The answer holds the token;
// it is shown once.
func (c *Client) MintToken(ctx context.Context, req wire.TokenRequest) (*wire.MintedToken, []byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.send(ctx, wire.OpMintToken, nil, body, nil, "")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the broker's answer: %w", err)
	}
	var m wire.MintedToken
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, raw, fmt.Errorf("decoding the broker's answer: %w", err)
	}
	return &m, raw, nil
}

// RevokeToken revokes the token with this id, for good (admin).
func (c *Client) RevokeToken(ctx context.Context, id string) (*wire.Token, []byte, error) {
	return get[wire.Token](ctx, c, wire.OpRevokeToken, nil, "", id)
}

// RotateTokenKey makes a new signing key current (admin).
func (c *Client) RotateTokenKey(ctx context.Context) (*wire.TokenKey, []byte, error) {
	return get[wire.TokenKey](ctx, c, wire.OpRotateKey, nil, "")
}
