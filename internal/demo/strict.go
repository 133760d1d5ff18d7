package demo

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const strictSchema = `{"type":"object","properties":{
	"n":{"type":"integer","description":"a positive integer"}},
	"required":["n"],"additionalProperties":false}`

type strictIn struct {
	N int `json:"n"`
}

// strict rejects a non-positive n with a JSON-RPC -32602 (Invalid params)
// error, as servers that validate arguments themselves do, instead of a
// tool result with isError. It gives the broker's "bad arguments" path a
// real child to test against.
func strict(_ context.Context, _ *mcp.CallToolRequest, in strictIn) (*mcp.CallToolResult, any, error) {
	if in.N <= 0 {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "n must be a positive integer"}
	}
	return text("ok"), nil, nil
}
