package client

import (
	"encoding/json"
	"net/http"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// standardHeaders sets the stateless era's standard headers on h for msg
// (package jsonrpc); toolOf returns the tool's Tool object from the
// cached tools/list, nil if it is not cached.
func standardHeaders(h http.Header, msg []byte, toolOf func(name string) json.RawMessage) {
	if e, err := jsonrpc.Parse(msg); err == nil {
		jsonrpc.SetHeaders(h, e.Method, e.Params, toolOf)
	}
}
