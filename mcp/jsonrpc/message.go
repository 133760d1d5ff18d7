package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Message is one JSON-RPC message, read in place: ID, Params, Result and
// Error are sub-slices of the bytes Parse was given (which the caller
// keeps alive and unmodified while it uses them), nil when absent.
//
// JSON-RPC 2.0 §4.1: "A Notification is a Request object without an "id"
// member." So an id of null is an id here (IsNull tells it apart): a
// response to a message whose id could not be read has one (§5: "If there
// was an error in detecting the id in the Request object […], it MUST be
// Null").
type Message struct {
	ID     json.RawMessage
	Method string // "" when absent
	Params json.RawMessage
	Result json.RawMessage
	Error  json.RawMessage // the raw error object
}

// IsRequest reports whether m is a request: a method and an id.
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether m is a notification: a method, no id.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports whether m is a response: an id with a result or an
// error, no method.
func (m *Message) IsResponse() bool {
	return m.Method == "" && m.ID != nil && (m.Result != nil || m.Error != nil)
}

// Parse reads msg's top-level members into a Message, without copying.
// msg must be valid JSON (Check); anything but an object is ErrNotObject,
// a method that is not a string an error. Of duplicate members the last
// wins, as in encoding/json.
func Parse(msg []byte) (Message, error) {
	var m Message
	var bad error
	err := Members(msg, func(key, val []byte) {
		switch string(key) {
		case `"id"`:
			m.ID = val
		case `"method"`:
			var ok bool
			if m.Method, ok = Unquote(val); !ok {
				bad = errors.New("its method is not a string")
			}
		case `"params"`:
			m.Params = val
		case `"result"`:
			m.Result = val
		case `"error"`:
			m.Error = val
		}
	})
	if err != nil {
		return m, err
	}
	return m, bad
}

// Check returns nil if msg is valid JSON, else encoding/json's syntax
// error, which says where it breaks.
func Check(msg []byte) error {
	if json.Valid(msg) {
		return nil
	}
	var v any
	if err := json.Unmarshal(msg, &v); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}

// IsNull reports whether raw is JSON null.
func IsNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// AppendRequest appends the request of id (raw JSON) for method, with
// params (raw JSON; nil = none), to b.
func AppendRequest(b, id []byte, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":`...)
	return appendParams(AppendString(b, method), params)
}

// AppendNotification appends the notification of method, with params
// (raw JSON; nil = none), to b.
func AppendNotification(b []byte, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	return appendParams(AppendString(b, method), params)
}

func appendParams(b, params []byte) []byte {
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// Notification is the notification of method with params encoded by
// encoding/json (nil = none).
func Notification(method string, params any) ([]byte, error) {
	var p []byte
	if params != nil {
		var err error
		if p, err = json.Marshal(params); err != nil {
			return nil, err
		}
	}
	return AppendNotification(nil, method, p), nil
}

// AppendResult appends the response to id (raw JSON; nil = null) with
// result, which must be JSON: it is copied, not re-encoded, so a large
// result (a child's, passed on) costs one copy.
func AppendResult(b, id, result []byte) []byte {
	b = appendID(b, id)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// AppendError appends the error response e to id (raw JSON; nil = null).
func AppendError(b, id []byte, e *Error) []byte {
	eb, err := json.Marshal(e)
	if err != nil { // Data is not JSON
		eb, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	b = appendID(b, id)
	b = append(b, `,"error":`...)
	b = append(b, eb...)
	return append(b, '}')
}

func appendID(b, id []byte) []byte {
	if len(id) == 0 {
		id = []byte("null")
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	return append(b, id...)
}
