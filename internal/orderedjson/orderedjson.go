// Package orderedjson decodes JSON keeping each object's members in
// document order, which encoding/json's maps lose: a JSON Schema's
// properties are written, and shown, in the order their author gave.
//
//	v, err := orderedjson.Decode([]byte(`{"b": 1, "a": [true]}`))
//	o := v.(*orderedjson.Object) // o.Keys: ["b", "a"]
//	n, _ := o.Get("b")            // json.Number("1")
//	fmt.Println(orderedjson.Compact(o)) // {"b":1,"a":[true]}
//
// Used by the TypeScript generator (package clientgen), the tool catalog's
// signatures (package catalog), and the config files mcpx edits (Indent:
// packages deploy and registry), which keep the user's member order. Stdlib
// only.
package orderedjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Object is a decoded JSON object that keeps its members in document
// order. A repeated key keeps its first position and its last value, as
// encoding/json does.
type Object struct {
	Keys []string       // the members' names, in document order, each once
	Vals map[string]any // the members' values, by name
}

// Get returns member k.
func (o *Object) Get(k string) (any, bool) {
	v, ok := o.Vals[k]
	return v, ok
}

// Has reports whether o has a member k.
func (o *Object) Has(k string) bool {
	_, ok := o.Vals[k]
	return ok
}

// Obj returns member k when it is an object.
func (o *Object) Obj(k string) *Object {
	v, _ := o.Vals[k].(*Object)
	return v
}

// Arr returns member k when it is an array.
func (o *Object) Arr(k string) ([]any, bool) {
	v, ok := o.Vals[k].([]any)
	return v, ok
}

// Str returns member k when it is a string.
func (o *Object) Str(k string) (string, bool) {
	v, ok := o.Vals[k].(string)
	return v, ok
}

// Strings returns the strings of member k when it is an array, skipping
// its other elements; nil if there are none.
func (o *Object) Strings(k string) []string {
	vs, _ := o.Arr(k)
	var ss []string
	for _, v := range vs {
		if s, ok := v.(string); ok {
			ss = append(ss, s)
		}
	}
	return ss
}

// MarshalJSON writes o compactly with its members in document order.
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(o.Vals[k])
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

// MaxDepth bounds the nesting of a document; deeper documents are refused
// rather than risking the stack on hostile input.
const MaxDepth = 200

// Decode decodes one JSON value into *Object, []any, string, json.Number,
// bool or nil.
func Decode(data []byte) (any, error) {
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
	if depth > MaxDepth {
		return nil, fmt.Errorf("JSON nested deeper than %d levels", MaxDepth)
	}
	tok, err := d.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			o := &Object{Vals: map[string]any{}}
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
				if _, dup := o.Vals[k]; !dup {
					o.Keys = append(o.Keys, k)
				}
				o.Vals[k] = v
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

// Compact writes v (as Decode returns it) on one line.
func Compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return strconv.Quote(fmt.Sprint(v))
	}
	return string(b)
}
