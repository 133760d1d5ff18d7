package jsonrpc

import "encoding/json"

// Error is a JSON-RPC error object, as a response carries it and as a Go
// error: what a peer answered, or what to answer it.
//
// JSON-RPC 2.0 §5.1: "When a rpc call encounters an error, the Response
// Object MUST contain the error member with a value that is a Object with
// the following members: code […] message […] data: A Primitive or
// Structured value that contains additional information about the error.
// This may be omitted."
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"` // nil = none
}

func (e *Error) Error() string { return e.Message }

// The error codes of JSON-RPC 2.0 (§5.1) and those MCP defines within its
// server-error range (-32000 to -32099).
const (
	CodeParseError     = -32700 // the message is not JSON
	CodeInvalidRequest = -32600 // JSON, but not a request
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeServerError is the implementation-defined server error: mcpx
	// answers it for a peer it could not reach, or that refused a request
	// over HTTP.
	CodeServerError = -32000
	// CodeResourceNotFound answers resources/read of a URI no server
	// lists (spec server/resources#error-handling).
	CodeResourceNotFound = -32002
	// CodeHeaderMismatch answers a stateless request whose standard headers
	// are missing or disagree with its body (SEP-2243).
	CodeHeaderMismatch = -32020
	// CodeMissingCapability answers a stateless request that needs a client
	// capability it did not declare (SEP-2575).
	CodeMissingCapability = -32021
	// CodeUnsupportedVersion answers a stateless request of a protocol
	// version the server does not speak; its data is {supported, requested}
	// (SEP-2575).
	CodeUnsupportedVersion = -32022
	// CodeUserRejected answers a sampling/createMessage the user rejected
	// (spec client/sampling, the error handling example).
	CodeUserRejected = -1
)
