package mcp

import (
	"bytes"
	"encoding/json"
	"errors"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// message is one JSON-RPC message from the client, with its params read
// once (params()).
type message struct {
	jsonrpc.Message

	// parsed: obj, metaObj and objErr are Params, its _meta and why
	// Params is not an object.
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

// parseMessage reads one POSTed message. A null id, which MCP forbids
// ("the ID MUST NOT be null"), is taken for none.
func parseMessage(body []byte) (*message, error) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return nil, errors.New("batches are not accepted: send one JSON-RPC message per POST")
	}
	if err := jsonrpc.Check(body); err != nil {
		return nil, errors.New("the body is not a JSON-RPC message: " + err.Error())
	}
	m, err := jsonrpc.Parse(body)
	if err != nil {
		return nil, errors.New("the body is not a JSON-RPC message: " + err.Error())
	}
	if jsonrpc.IsNull(m.ID) {
		m.ID = nil
	}
	return &message{Message: m}, nil
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

// resultMsg is the response of id with result, which is trusted to be
// JSON (a child's, passed on unchanged, or mcpx's own): it is copied, not
// re-encoded, so a large result costs one copy.
func resultMsg(id, result json.RawMessage) []byte {
	return jsonrpc.AppendResult(make([]byte, 0, len(id)+len(result)+40), id, result)
}

// rpcErrorMsg is the error response of id with code, msg and data.
func rpcErrorMsg(id json.RawMessage, code int, msg string, data json.RawMessage) []byte {
	return jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: code, Message: msg, Data: data})
}
