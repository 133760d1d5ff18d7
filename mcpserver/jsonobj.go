package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// parseObject reads a JSON object. null and absent are the empty object.
func parseObject(raw []byte) (object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var o object
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("member %q: %w", k, err)
		}
		o = append(o, member{k, v})
	}
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	return o, nil
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
	var s string
	if v := o.get(k); v != nil {
		json.Unmarshal(v, &s) //nolint:errcheck // not a string: ""
	}
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
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var out []json.RawMessage
	err := json.Unmarshal(raw, &out)
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
