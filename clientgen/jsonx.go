package clientgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// object is a decoded JSON object that keeps its members in document order,
// so that generated members follow the schema author's order. A repeated
// key keeps its first position and its last value, as encoding/json does.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) has(k string) bool {
	_, ok := o.vals[k]
	return ok
}

// obj returns member k when it is an object.
func (o *object) obj(k string) *object {
	v, _ := o.vals[k].(*object)
	return v
}

// arr returns member k when it is an array.
func (o *object) arr(k string) ([]any, bool) {
	v, ok := o.vals[k].([]any)
	return v, ok
}

func (o *object) str(k string) (string, bool) {
	v, ok := o.vals[k].(string)
	return v, ok
}

// MarshalJSON writes o compactly with its members in document order.
func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// maxJSONDepth bounds the nesting of a schema document; deeper documents
// are refused rather than risking the stack on hostile input.
const maxJSONDepth = 200

// decodeJSON decodes one JSON value into *object, []any, string,
// json.Number, bool or nil.
func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the top-level value")
	}
	return v, nil
}

func decodeValue(d *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("JSON nested deeper than %d levels", maxJSONDepth)
	}
	tok, err := d.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			o := &object{vals: map[string]any{}}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, fmt.Errorf("invalid JSON: %w", err)
				}
				k := kt.(string) // the decoder only yields string keys here
				v, err := decodeValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			if _, err := d.Token(); err != nil {
				return nil, fmt.Errorf("invalid JSON: %w", err)
			}
			return o, nil
		case '[':
			a := []any{}
			for d.More() {
				v, err := decodeValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := d.Token(); err != nil {
				return nil, fmt.Errorf("invalid JSON: %w", err)
			}
			return a, nil
		}
		return nil, fmt.Errorf("invalid JSON: unexpected %v", tok)
	default:
		return tok, nil // string, json.Number, bool, nil
	}
}

// compactJSON writes v (as decodeJSON returns it) on one line.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return strconv.Quote(fmt.Sprint(v))
	}
	return string(b)
}
