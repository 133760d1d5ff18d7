package mcpclient

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// The standard headers of a streamable HTTP request in the stateless era
// (2026-07-28, SEP-2243): the server routes and checks a request by them
// without reading its body, and refuses one whose headers are missing or
// disagree with the body.
const (
	headerMethod      = "Mcp-Method"
	headerName        = "Mcp-Name"
	headerParamPrefix = "Mcp-Param-"
)

// standardHeaders sets them on h for msg: Mcp-Method on every request and
// notification; Mcp-Name for tools/call and prompts/get (the name) and
// resources/read (the uri); and for tools/call an Mcp-Param-<Header> per
// argument whose input-schema property carries "x-mcp-header": <Header>
// (toolOf returns the tool's Tool object from the cached tools/list, nil
// if it is not cached). A value that is not plain printable ASCII is sent
// base64-encoded in the =?base64?…?= wrapper.
func standardHeaders(h http.Header, msg []byte, toolOf func(name string) json.RawMessage) {
	e, err := parseEnvelope(msg)
	if err != nil || e.method == nil {
		return
	}
	method, ok := unquote(e.method)
	if !ok {
		return
	}
	h.Set(headerMethod, method)
	var p struct {
		Name      string                     `json:"name"`
		URI       string                     `json:"uri"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		if json.Unmarshal(e.params, &p) != nil {
			return
		}
	default:
		return
	}
	if method == "resources/read" {
		h.Set(headerName, p.URI)
		return
	}
	h.Set(headerName, p.Name)
	if method != "tools/call" || toolOf == nil || len(p.Arguments) == 0 {
		return
	}
	tool := toolOf(p.Name)
	if tool == nil {
		return
	}
	var t struct {
		InputSchema headerSchema `json:"inputSchema"`
	}
	if json.Unmarshal(tool, &t) != nil {
		return
	}
	paramHeaders(h, t.InputSchema.Properties, p.Arguments)
}

// headerSchema is what standardHeaders reads of an input schema.
type headerSchema struct {
	Header     string                  `json:"x-mcp-header"`
	Properties map[string]headerSchema `json:"properties"`
}

// paramHeaders sets the Mcp-Param- header of each annotated property
// present in args with a primitive value, at any depth.
func paramHeaders(h http.Header, props map[string]headerSchema, args map[string]json.RawMessage) {
	for name, prop := range props {
		raw, ok := args[name]
		if !ok {
			continue
		}
		if prop.Header != "" {
			if v, ok := headerValue(raw); ok {
				h.Set(headerParamPrefix+prop.Header, v)
			}
		}
		if len(prop.Properties) > 0 {
			var nested map[string]json.RawMessage
			if json.Unmarshal(raw, &nested) == nil {
				paramHeaders(h, prop.Properties, nested)
			}
		}
	}
}

// headerValue is a primitive argument as a header value: a string as it
// is, a boolean as true/false, an integer (within ±2^53) in decimal;
// anything else (null, a fraction, an object) has no header.
func headerValue(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case bool:
		s = strconv.FormatBool(v)
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1<<53-1 {
			return "", false
		}
		s = strconv.FormatInt(int64(v), 10)
	default:
		return "", false
	}
	if needsBase64(s) {
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=", true
	}
	return s, true
}

// needsBase64: leading or trailing white space, a byte outside printable
// ASCII, or a value that looks like the wrapper itself.
func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if strings.ContainsAny(s[:1], " \t") || strings.ContainsAny(s[len(s)-1:], " \t") {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")
}
