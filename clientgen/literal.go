package clientgen

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Enum and const values as TypeScript literal types, and property names as
// TypeScript keys.

// literals returns the union of the literal types of vs, keeping only the
// values that "type" (when typed) admits.
func (c *compiler) literals(vs []any, types []string, typed bool, ptr string) expr {
	var alts []expr
	seen := map[string]bool{}
	for _, v := range vs {
		if typed && !admits(types, v) {
			continue
		}
		s, ok := literal(v)
		if !ok {
			return c.unknown(ptr, "a value cannot be written as a TypeScript literal")
		}
		if !seen[s] {
			seen[s] = true
			alts = append(alts, prim(s))
		}
	}
	if len(alts) == 0 {
		return prim("never")
	}
	return union(alts)
}

// jsonType returns the JSON Schema type name of a decoded value ("integer"
// for a number written without fraction or exponent).
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

// admits reports whether a "type" list admits the value v.
func admits(types []string, v any) bool {
	t := jsonType(v)
	switch {
	case slices.Contains(types, t):
		return true
	case t == "integer":
		return slices.Contains(types, "number")
	case t == "number":
		return slices.Contains(types, "integer") && isInteger(v)
	}
	return false
}

func isInteger(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return err == nil && f == math.Trunc(f)
}

// literal writes v as a TypeScript literal type; ok is false for a number
// beyond float64.
func literal(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(v), true
	case string:
		return quote(v), true
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", false
		}
		return strconv.FormatFloat(f, 'g', -1, 64), true
	case []any:
		var es []string
		for _, e := range v {
			s, ok := literal(e)
			if !ok {
				return "", false
			}
			es = append(es, s)
		}
		return "[" + strings.Join(es, ", ") + "]", true
	case *object:
		var ms []string
		for _, k := range v.Keys {
			s, ok := literal(v.Vals[k])
			if !ok {
				return "", false
			}
			ms = append(ms, propKey(k)+": "+s)
		}
		if len(ms) == 0 {
			return "{ [key: string]: never }", true
		}
		return "{ " + strings.Join(ms, "; ") + " }", true
	}
	return "", false
}

// quote writes s as a TypeScript string literal: JSON's escapes are
// JavaScript's, and encoding/json escapes U+2028 and U+2029 too.
func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// propKey writes a property name: bare when it is an ASCII identifier,
// quoted otherwise. __proto__ is quoted too: bare, it reads as the
// prototype in JavaScript (an object literal's __proto__: sets it, and the
// member never reaches JSON.stringify), so it is written as the data key
// it is.
func propKey(k string) string {
	if k == "" || k == "__proto__" {
		return quote(k)
	}
	for i, r := range k {
		ok := r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return quote(k)
		}
	}
	return k
}
