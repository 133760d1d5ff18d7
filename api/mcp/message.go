package mcp

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// JSON-RPC error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	// codeUnsupportedVersion answers a stateless request of a version
	// mcpx does not speak (2026-07-28); data {supported, requested}.
	codeUnsupportedVersion = -32022
	// codeMissingCapability answers a stateless request that needs a
	// client capability it did not declare (SEP-2575).
	codeMissingCapability = -32021
)

// The _meta keys of a stateless request (SEP-2575).
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// message is one JSON-RPC message from the client.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`

	// params and meta are Params and its _meta read once (params()).
	parsed  bool
	obj     object
	metaObj object
	objErr  error
}

// params is Params as an object, read once: the header checks, the
// dispatch and the call read it.
func (m *message) params() (object, error) {
	if !m.parsed {
		m.parsed = true
		m.obj, m.objErr = parseObject(m.Params)
		if m.objErr == nil {
			m.metaObj, _ = parseObject(m.obj.get("_meta"))
		}
	}
	return m.obj, m.objErr
}

func parseMessage(body []byte) (*message, error) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return nil, errors.New("batches are not accepted: send one JSON-RPC message per POST")
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v) // for the syntax error's words
		return nil, errors.New("the body is not a JSON-RPC message: " + err.Error())
	}
	if len(body) == 0 || body[0] != '{' {
		return nil, errors.New("the body is not a JSON-RPC message: not an object")
	}
	var m message
	var bad error
	err := jsonrpc.Members(body, func(k, v []byte) {
		switch string(k) {
		case `"id"`:
			m.ID = v
		case `"method"`:
			var ok bool
			if m.Method, ok = jsonrpc.Unquote(v); !ok {
				bad = errors.New("the body is not a JSON-RPC message: its method is not a string")
			}
		case `"params"`:
			m.Params = v
		case `"result"`:
			m.Result = v
		case `"error"`:
			m.Error = v
		}
	})
	if err = cmp.Or(err, bad); err != nil {
		return nil, err
	}
	if bytes.Equal(m.ID, []byte("null")) {
		m.ID = nil
	}
	return &m, nil
}

func (m *message) isRequest() bool      { return m.Method != "" && m.ID != nil }
func (m *message) isNotification() bool { return m.Method != "" && m.ID == nil }
func (m *message) isResponse() bool {
	return m.Method == "" && m.ID != nil && (m.Result != nil || m.Error != nil)
}

// idString is the id as a map key: a string id unquoted, a number as written.
func (m *message) idString() string {
	if s, ok := jsonrpc.Unquote(m.ID); ok {
		return s
	}
	return string(m.ID)
}

// metaRaw is the params._meta member k, raw.
func (m *message) metaRaw(k string) json.RawMessage {
	if _, err := m.params(); err != nil {
		return nil
	}
	return m.metaObj.get(k)
}

// meta is the string params._meta member k.
func (m *message) meta(k string) string {
	s, _ := jsonrpc.Unquote(m.metaRaw(k)) // not a string: ""
	return s
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

// response is a JSON-RPC response: a result or an error.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// resultMsg is the response of id with result, which is trusted to be
// JSON (a child's, passed on unchanged, or mcpx's own): it is copied, not
// re-encoded, so a large result costs one copy.
func resultMsg(id, result json.RawMessage) []byte {
	b := make([]byte, 0, len(id)+len(result)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

func rpcErrorMsg(id json.RawMessage, code int, msg string, data json.RawMessage) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(response{JSONRPC: "2.0", ID: id, Error: &rpcError{code, msg, data}})
	return b
}
