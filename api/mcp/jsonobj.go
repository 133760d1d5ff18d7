package mcp

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// member is one member of a JSON object, its value as it came.
type member struct {
	key string
	val json.RawMessage
}

// object is a JSON object's members in their order: what the broker passes
// on is rewritten member by member, never re-encoded whole, so that fields
// mcpx does not know reach the client as the child sent them.
type object []member

// parseObject reads a JSON object, which must be valid JSON (every
// message is checked whole when it is read; a child's results are the
// child's session's). null and absent are the empty object.
func parseObject(raw []byte) (object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var o object
	var bad error
	err := jsonrpc.Members(raw, func(k, v []byte) {
		key, ok := jsonrpc.Unquote(k)
		if !ok {
			bad = errors.New("a member's key is not a string")
		}
		o = append(o, member{key, v})
	})
	return o, cmp.Or(err, bad)
}

func (o object) get(k string) json.RawMessage {
	for _, m := range o {
		if m.key == k {
			return m.val
		}
	}
	return nil
}

// str is the string member k; "" if absent or not a string.
func (o object) str(k string) string {
	s, _ := jsonrpc.Unquote(o.get(k)) // absent or not a string: ""
	return s
}

// set replaces member k, or appends it.
func (o object) set(k string, v json.RawMessage) object {
	for i := range o {
		if o[i].key == k {
			o[i].val = v
			return o
		}
	}
	return append(o, member{k, v})
}

// setString is set with a JSON string.
func (o object) setString(k, v string) object {
	b, _ := json.Marshal(v)
	return o.set(k, b)
}

// without is o less member k (a new object; o is unchanged).
func (o object) without(k string) object {
	out := make(object, 0, len(o))
	for _, m := range o {
		if m.key != k {
			out = append(out, m)
		}
	}
	return out
}

func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(m.key)
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, m.val...)
	}
	return append(b, '}'), nil
}

// bytes is the object's JSON.
func (o object) bytes() json.RawMessage {
	b, _ := o.MarshalJSON()
	return b
}

// elements reads a JSON array's elements as they came; null is none.
func elements(raw []byte) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	var out []json.RawMessage
	err := jsonrpc.Elements(raw, func(v []byte) { out = append(out, v) })
	return out, err
}

// array joins elements into a JSON array.
func array(els []json.RawMessage) json.RawMessage {
	b := []byte{'['}
	for i, e := range els {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, ']')
}
