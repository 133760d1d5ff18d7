package jsonrpc

// The scanner: JSON read without decoding it, the members of an object
// and the elements of an array as the raw bytes they are, so that a
// message can be routed and rewritten member by member and passed on as it
// came. The input must be valid JSON (Check it first, or take it from a
// transport that does): on invalid input the readers stop early or give
// odd slices, never panic.

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// ErrNotObject is Members' error for a value that is not an object.
var ErrNotObject = errors.New("not a JSON object")

// Members calls fn for each member of the JSON object obj: key is the raw
// (quoted) key, val the raw value. Anything else, null included, is
// ErrNotObject.
func Members(obj []byte, fn func(key, val []byte)) error {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return ErrNotObject
	}
	i = SkipSpace(obj, i+1)
	for i < len(obj) && obj[i] != '}' {
		kend := SkipValue(obj, i)
		key := obj[i:kend]
		i = SkipSpace(obj, kend)
		i = SkipSpace(obj, i+1) // ':'
		vend := SkipValue(obj, i)
		fn(key, obj[i:vend])
		i = SkipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = SkipSpace(obj, i+1)
		}
	}
	return nil
}

// Elements calls fn for each element of the JSON array arr. A JSON null
// is an empty array.
func Elements(arr []byte, fn func(val []byte)) error {
	i := SkipSpace(arr, 0)
	if bytes.Equal(arr[i:], []byte("null")) {
		return nil
	}
	if i >= len(arr) || arr[i] != '[' {
		return errors.New("not a JSON array")
	}
	i = SkipSpace(arr, i+1)
	for i < len(arr) && arr[i] != ']' {
		end := SkipValue(arr, i)
		fn(arr[i:end])
		i = SkipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = SkipSpace(arr, i+1)
		}
	}
	return nil
}

// Member returns the raw value of key (given quoted, e.g. `"tools"`) in
// obj; nil if it has none. Of duplicate keys the last wins, as in
// encoding/json and JavaScript.
func Member(obj []byte, key string) []byte {
	var v []byte
	Members(obj, func(k, val []byte) { //nolint:errcheck // not an object: no member
		if string(k) == key {
			v = val
		}
	})
	return v
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// SkipValue returns the index just past the JSON value starting at b[i].
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = SkipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// SkipString returns the index just past the JSON string starting at b[i].
func SkipString(b []byte, i int) int {
	i++
	for i < len(b) {
		switch b[i] {
		case '\\':
			i += 2
			continue
		case '"':
			return i + 1
		}
		i++
	}
	return i
}

// Unquote decodes a raw JSON string as encoding/json does (invalid UTF-8
// becomes U+FFFD); ok is false if raw is not a string.
func Unquote(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// AppendString appends s as a JSON string.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// SetMember returns obj with key (given unquoted and plain) set to the raw
// value val: an existing member's value is replaced in place (the last one,
// which is the one parsers keep), otherwise the member is inserted first.
// Other members keep their bytes and order. obj is not modified.
func SetMember(obj []byte, key string, val []byte) ([]byte, error) {
	start := SkipSpace(obj, 0)
	if start >= len(obj) || obj[start] != '{' {
		return nil, ErrNotObject
	}
	qkey := `"` + key + `"`
	vs, ve := -1, -1
	Members(obj, func(k, v []byte) { //nolint:errcheck // an object: checked above
		if string(k) == qkey {
			// v is a sub-slice of obj: recover its offsets.
			vs = cap(obj) - cap(v)
			ve = vs + len(v)
		}
	})
	out := make([]byte, 0, len(obj)+len(key)+len(val)+4)
	if vs >= 0 {
		out = append(out, obj[:vs]...)
		out = append(out, val...)
		return append(out, obj[ve:]...), nil
	}
	out = append(out, obj[:start+1]...)
	out = append(out, qkey...)
	out = append(out, ':')
	out = append(out, val...)
	rest := obj[start+1:]
	if i := SkipSpace(rest, 0); i < len(rest) && rest[i] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}
