package mcp

import (
	"encoding/json"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// codeRateLimited answers a request a rate limit or maxConcurrent refused
// (broker.KindRateLimited): an implementation-defined server error (the
// JSON-RPC range -32000 to -32099; MCP defines none for this). Its data
// says which limit, its value and when to retry, as the REST API's 429
// problem does: {"type", "limit": {"kind", "value"}, "retryAfter"}.
const codeRateLimited = -32029

// problemTypeRateLimited is the REST problem type of the same refusal.
const problemTypeRateLimited = "https://mcpx.dev/problems/rate-limited"

func rateLimitedError(msg string, be *broker.Error) *jsonrpc.Error {
	type limit struct {
		Kind  string `json:"kind"`
		Value string `json:"value"`
	}
	data := struct {
		Type       string `json:"type"`
		Limit      *limit `json:"limit,omitempty"`
		RetryAfter int    `json:"retryAfter"`
	}{Type: problemTypeRateLimited, RetryAfter: int((be.RetryAfter + time.Second - 1) / time.Second)}
	if be.Limit != nil {
		data.Limit = &limit{string(be.Limit.Kind), be.Limit.Value}
	}
	b, _ := json.Marshal(data) // strings and a number: it always marshals
	return &jsonrpc.Error{Code: codeRateLimited, Message: msg, Data: b}
}
