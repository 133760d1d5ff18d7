package orderedjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Indent writes v (as Decode returns it, or built of Objects) indented by two
// spaces, strings not HTML-escaped: a user's "<" stays "<".
func Indent(v any) string {
	var b strings.Builder
	writeIndented(&b, v, "")
	return b.String()
}

func writeIndented(b *strings.Builder, v any, indent string) {
	inner := indent + "  "
	switch v := v.(type) {
	case *Object:
		if len(v.Keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range v.Keys {
			b.WriteString(inner + Quote(k) + ": ")
			writeIndented(b, v.Vals[k], inner)
			if i < len(v.Keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case []any:
		if len(v) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range v {
			b.WriteString(inner)
			writeIndented(b, e, inner)
			if i < len(v)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	case string:
		b.WriteString(Quote(v))
	case json.Number:
		b.WriteString(v.String())
	case bool:
		fmt.Fprint(b, v)
	case nil:
		b.WriteString("null")
	default: // not from Decode or object: as encoding/json has it
		j, _ := json.Marshal(v)
		b.Write(j)
	}
}

// Quote quotes s as JSON without HTML escaping; it is also a valid
// TOML basic string (the escapes \" \\ \n \t \r \uXXXX are TOML's too).
func Quote(s string) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(s) //nolint:errcheck // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// ErrNotObject is DecodeObject's error for a document that is JSON but
// not an object.
var ErrNotObject = errors.New("it is not a JSON object")

// DecodeObject decodes a JSON file that must hold one object, as mcpx
// reads the config files it edits (a client's, or its own): an empty (or
// blank) file is the empty object; JSON with comments or trailing commas
// is refused, since rewriting it would lose them.
func DecodeObject(file []byte) (*Object, error) {
	if len(bytes.TrimSpace(file)) == 0 {
		return &Object{Vals: map[string]any{}}, nil
	}
	v, err := Decode(file)
	if err != nil {
		return nil, fmt.Errorf("it is not plain JSON (%w): mcpx edits only plain JSON; add the entry yourself", err)
	}
	o, ok := v.(*Object)
	if !ok {
		return nil, ErrNotObject
	}
	return o, nil
}
