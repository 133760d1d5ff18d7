package openapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/orderedjson"
)

// Parameter serialisation, OpenAPI 3.1.1 section 4.8.12.4 ("Style
// Values") and its examples: path parameters in styles simple, label and
// matrix; query parameters in form, spaceDelimited, pipeDelimited and
// deepObject; headers in simple; cookies in form. Names and values are
// percent-encoded per RFC 3986 (every character but the unreserved
// A-Z a-z 0-9 - . _ ~), a space as %20; a query parameter with
// allowReserved keeps the reserved characters as they are. The delimiters
// a style adds are written as the specification's examples write them:
// "," "." ";" "=" and "&" as they are, the space of spaceDelimited as %20,
// the pipe of pipeDelimited as %7C, the brackets of deepObject as [ and ].
// A nested object in deepObject nests its brackets (a[b][c]=1), as qs and
// Rails read them. A value that is an object or array where the style has
// no form for it is sent as JSON text.

// escape percent-encodes s per RFC 3986; with reserved, the reserved
// characters (gen-delims and sub-delims) stay as they are.
func escape(s string, reserved bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || reserved && strings.IndexByte(":/?#[]@!$&'()*+,;=", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// scalar renders a primitive as text: strings as they are, numbers in
// plain decimal, booleans as true/false, null as "". An object or array
// (where a primitive is due) is its JSON.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return plainNumber(v)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return ""
	default:
		return orderedjson.Compact(v)
	}
}

// plainNumber writes 1e3 as 1000: no service is obliged to parse exponents.
func plainNumber(n json.Number) string {
	s := n.String()
	if !strings.ContainsAny(s, "eE") {
		return s
	}
	if i, err := n.Int64(); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if f, err := n.Float64(); err == nil {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return s
}

// pair is one member of an object value.
type pair struct{ k, v string }

// parts splits a value into its items (an array) or members (an object);
// a primitive is neither.
func parts(v any) (items []string, members []pair, kind byte) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			items = append(items, scalar(e))
		}
		return items, nil, 'a'
	case *orderedjson.Object:
		for _, k := range v.Keys {
			members = append(members, pair{k, scalar(v.Vals[k])})
		}
		return nil, members, 'o'
	}
	return nil, nil, 'p'
}

// joinEsc escapes each of items and joins them with sep.
func joinEsc(items []string, sep string, reserved bool) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = escape(s, reserved)
	}
	return strings.Join(out, sep)
}

// flat is an object's members as k,v,k,v (explode false) or k=v,k=v.
func flat(members []pair, sep string, explode, reserved bool) string {
	var out []string
	for _, m := range members {
		if explode {
			out = append(out, escape(m.k, reserved)+"="+escape(m.v, reserved))
		} else {
			out = append(out, escape(m.k, reserved), escape(m.v, reserved))
		}
	}
	return strings.Join(out, sep)
}

// pathValue is a path parameter's expansion.
func (p *param) pathValue(v any) string {
	items, members, kind := parts(v)
	name := escape(p.name, false)
	switch p.style {
	case "label":
		sep := ","
		if p.explode {
			sep = "."
		}
		switch kind {
		case 'a':
			return "." + joinEsc(items, sep, false)
		case 'o':
			return "." + flat(members, sep, p.explode, false)
		}
		return "." + escape(scalar(v), false)
	case "matrix":
		switch {
		case kind == 'a' && p.explode:
			return ";" + name + "=" + joinEsc(items, ";"+name+"=", false)
		case kind == 'a':
			return ";" + name + "=" + joinEsc(items, ",", false)
		case kind == 'o' && p.explode:
			return ";" + flat(members, ";", true, false)
		case kind == 'o':
			return ";" + name + "=" + flat(members, ",", false, false)
		}
		return ";" + name + "=" + escape(scalar(v), false)
	}
	return p.simple(v, false)
}

// simple is the simple style (path and header).
func (p *param) simple(v any, header bool) string {
	items, members, kind := parts(v)
	esc := func(s string) string {
		if header {
			return s
		}
		return escape(s, false)
	}
	switch kind {
	case 'a':
		for i := range items {
			items[i] = esc(items[i])
		}
		return strings.Join(items, ",")
	case 'o':
		var out []string
		for _, m := range members {
			if p.explode {
				out = append(out, esc(m.k)+"="+esc(m.v))
			} else {
				out = append(out, esc(m.k), esc(m.v))
			}
		}
		return strings.Join(out, ",")
	}
	return esc(scalar(v))
}

// query appends a query parameter's name=value pairs to q.
func (p *param) query(q []string, v any) []string {
	r := p.allowReserved
	name := escape(p.name, false)
	if p.asJSON {
		return append(q, name+"="+escape(orderedjson.Compact(v), r))
	}
	items, members, kind := parts(v)
	switch {
	case p.style == "deepObject" && kind == 'o':
		return deepObject(q, name, v.(*orderedjson.Object), r)
	case kind == 'a' && p.explode:
		for _, it := range items {
			q = append(q, name+"="+escape(it, r))
		}
		return q
	case kind == 'a':
		sep := map[string]string{"spaceDelimited": "%20", "pipeDelimited": "%7C"}[p.style]
		if sep == "" {
			sep = ","
		}
		return append(q, name+"="+joinEsc(items, sep, r))
	case kind == 'o' && p.explode:
		for _, m := range members {
			q = append(q, escape(m.k, r)+"="+escape(m.v, r))
		}
		return q
	case kind == 'o':
		return append(q, name+"="+flat(members, ",", false, r))
	}
	return append(q, name+"="+escape(scalar(v), r))
}

// deepObject writes name[k]=v for each member, nesting brackets for a
// nested object and repeating name[k] for an array's items.
func deepObject(q []string, prefix string, o *orderedjson.Object, r bool) []string {
	for _, k := range o.Keys {
		key := prefix + "[" + escape(k, r) + "]"
		switch v := o.Vals[k].(type) {
		case *orderedjson.Object:
			q = deepObject(q, key, v, r)
		case []any:
			for _, e := range v {
				q = append(q, key+"="+escape(scalar(e), r))
			}
		default:
			q = append(q, key+"="+escape(scalar(v), r))
		}
	}
	return q
}

// cookie is a cookie parameter as name=value (form style, RFC 6265 has no
// escaping of its own, so the value is percent-encoded).
func (p *param) cookie(v any) string {
	items, members, kind := parts(v)
	switch kind {
	case 'a':
		return p.name + "=" + joinEsc(items, ",", false)
	case 'o':
		return p.name + "=" + flat(members, ",", false, false)
	}
	return p.name + "=" + escape(scalar(v), false)
}

// form encodes an object as application/x-www-form-urlencoded.
func form(v any) (string, error) {
	o, ok := v.(*orderedjson.Object)
	if !ok {
		return "", fmt.Errorf("body: a form body must be an object")
	}
	var q []string
	for _, k := range o.Keys {
		items, _, kind := parts(o.Vals[k])
		if kind != 'a' {
			items = []string{scalar(o.Vals[k])}
		}
		for _, it := range items {
			q = append(q, url.QueryEscape(k)+"="+url.QueryEscape(it))
		}
	}
	return strings.Join(q, "&"), nil
}
