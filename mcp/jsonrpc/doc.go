// Package jsonrpc is the vocabulary MCP is spoken in, once for all of
// mcpx's speakers: the client of child servers (mcp/client), the endpoint
// (api/mcp), the bridge (mcp/bridge) and the in-process server (adapter).
// It holds the JSON-RPC 2.0 envelope and the scanner that reads it in
// place, the one error type and the error codes, what a receiver of
// notifications/cancelled keeps (InFlight), and MCP's protocol versions,
// _meta keys, method names and HTTP headers.
//
// Messages are read without decoding them: Parse splits a message into its
// members as sub-slices of the bytes it was given, so that a result
// reaches its caller, or is passed on, as the peer sent it, with no
// re-encoding and no copy; the Append functions write one the same way.
// Only what a speaker must read is decoded (a method name, an id).
//
//	if err := jsonrpc.Check(body); err != nil {
//		return jsonrpc.AppendError(nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: err.Error()})
//	}
//	m, err := jsonrpc.Parse(body)
//	switch {
//	case err != nil:
//		return jsonrpc.AppendError(nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()})
//	case m.IsRequest() && m.Method == jsonrpc.MethodPing:
//		return jsonrpc.AppendResult(nil, m.ID, []byte(`{}`))
//	case m.Method == jsonrpc.MethodCancelled:
//		calls.Cancelled(m.Params) // calls: the jsonrpc.InFlight being served
//	}
//
// Spec (basic): "All messages between MCP clients and servers MUST follow
// the JSON-RPC 2.0 specification", with three kinds of message: requests
// ("Requests MUST include a string or integer ID", which "MUST NOT be
// null"), responses ("Responses MUST include the same ID as the request
// they correspond to") and notifications ("Notifications MUST NOT include
// an ID").
//
// The package is a leaf: the standard library only.
package jsonrpc
