package jsonrpc

// The standard headers of Streamable HTTP. A session of the handshake era
// carries Mcp-Session-Id and MCP-Protocol-Version (basic/transports:
// "the client MUST include the MCP-Protocol-Version: <protocol-version>
// HTTP header on all subsequent requests to the MCP server"). A request
// of the stateless era (SEP-2243) also names its method and target in
// headers, so that a server routes and checks it without reading its
// body, and refuses one whose headers are missing or disagree with the
// body (CodeHeaderMismatch). Both of mcpx's HTTP clients of MCP servers
// set them with SetHeaders: mcp/client (to a url child) and mcp/bridge
// (`mcpx mcp`, to an endpoint).

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// The header names, as http.Header keys them.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderParamPrefix     = "Mcp-Param-"
)

// SetHeaders sets the stateless era's standard headers on h for a message
// of method with params (raw JSON): Mcp-Method on every request and
// notification; Mcp-Name for tools/call and prompts/get (the name) and
// resources/read (the uri); and for tools/call an Mcp-Param-<Header> per
// argument whose input-schema property carries "x-mcp-header": <Header>
// (toolOf returns the tool's Tool object, from a tools/list, or nil if it
// is not known; nil toolOf = none is). A value that is not plain printable ASCII is sent
// base64-encoded in the =?base64?…?= wrapper.
func SetHeaders(h http.Header, method string, params json.RawMessage, toolOf func(name string) json.RawMessage) {
	if method == "" {
		return
	}
	h.Set(HeaderMethod, method)
	var p struct {
		Name      string                     `json:"name"`
		URI       string                     `json:"uri"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	switch method {
	case MethodToolsCall, MethodPromptsGet, MethodResourcesRead:
		if json.Unmarshal(params, &p) != nil {
			return
		}
	default:
		return
	}
	if method == MethodResourcesRead {
		h.Set(HeaderName, p.URI)
		return
	}
	h.Set(HeaderName, p.Name)
	if method != MethodToolsCall || toolOf == nil || len(p.Arguments) == 0 {
		return
	}
	tool := toolOf(p.Name)
	if tool == nil {
		return
	}
	var t struct {
		InputSchema schema `json:"inputSchema"`
	}
	if json.Unmarshal(tool, &t) != nil {
		return
	}
	paramHeaders(h, t.InputSchema.Properties, p.Arguments)
}

// HasParamHeaders reports whether a Tool object (raw) maps an argument to
// a header, so that a client keeps only the tools SetHeaders needs to know.
func HasParamHeaders(tool json.RawMessage) bool {
	var t struct {
		InputSchema schema `json:"inputSchema"`
	}
	return json.Unmarshal(tool, &t) == nil && t.InputSchema.annotated()
}

// schema is what SetHeaders reads of an input schema.
type schema struct {
	Header     string            `json:"x-mcp-header"`
	Properties map[string]schema `json:"properties"`
}

func (s schema) annotated() bool {
	if s.Header != "" {
		return true
	}
	for _, p := range s.Properties {
		if p.annotated() {
			return true
		}
	}
	return false
}

// paramHeaders sets the Mcp-Param- header of each annotated property
// present in args with a primitive value, at any depth.
func paramHeaders(h http.Header, props map[string]schema, args map[string]json.RawMessage) {
	for name, prop := range props {
		raw, ok := args[name]
		if !ok {
			continue
		}
		if prop.Header != "" {
			if v, ok := headerValue(raw); ok {
				h.Set(HeaderParamPrefix+prop.Header, v)
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

// CheckParamHeaders returns an error naming the first x-mcp-header
// annotation of a Tool object (raw) that the 2026-07-28 revision forbids,
// nil if there is none: a client of that revision over Streamable HTTP
// excludes such a tool from its tools and never calls it (SEP-2243,
// basic/transports, "Custom Headers from Tool Parameters"; the
// conformance suite's http-invalid-tool-headers scenario). A header name
// is a non-empty HTTP token (RFC 9110 §5.6.2: ASCII letters, digits and
// !#$%&'*+-.^_`|~), unique in the tool without regard to case, on a
// property of type string, integer or boolean (not number: a float has no
// one spelling; not object, array or null). A property that names no
// type is let be.
func CheckParamHeaders(tool json.RawMessage) error {
	var t struct {
		InputSchema checkedSchema `json:"inputSchema"`
	}
	if err := json.Unmarshal(tool, &t); err != nil {
		return fmt.Errorf("reading its inputSchema: %w", err)
	}
	return t.InputSchema.check("", map[string]string{})
}

// checkedSchema is what CheckParamHeaders reads of a schema: unlike
// schema, it tells an empty annotation from none.
type checkedSchema struct {
	Header     *string                  `json:"x-mcp-header"`
	Type       json.RawMessage          `json:"type"`
	Properties map[string]checkedSchema `json:"properties"`
}

func (s checkedSchema) check(path string, seen map[string]string) error {
	if s.Header != nil {
		h := *s.Header
		switch {
		case h == "":
			return fmt.Errorf("property %s: x-mcp-header is empty", path)
		case !isToken(h):
			return fmt.Errorf("property %s: x-mcp-header %q is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~ only)", path, h)
		case seen[strings.ToLower(h)] != "":
			return fmt.Errorf("properties %s and %s: both map to the header %q (x-mcp-header names are unique regardless of case)", seen[strings.ToLower(h)], path, h)
		}
		if typ, ok := primitive(s.Type); !ok {
			return fmt.Errorf("property %s: x-mcp-header %q on a property of type %s (string, integer or boolean only)", path, h, typ)
		}
		seen[strings.ToLower(h)] = path
	}
	for name, p := range s.Properties {
		if err := p.check(strings.TrimPrefix(path+"."+name, "."), seen); err != nil {
			return err
		}
	}
	return nil
}

// primitive reports whether a schema's type (raw; absent = any) allows a
// header: string, integer, boolean, or a list of them, null aside.
func primitive(typ json.RawMessage) (string, bool) {
	if len(typ) == 0 {
		return "", true
	}
	var types []string
	var one string
	if json.Unmarshal(typ, &one) == nil {
		types = []string{one}
	} else if json.Unmarshal(typ, &types) != nil {
		return string(typ), false
	}
	n := 0
	for _, t := range types {
		switch t {
		case "string", "integer", "boolean":
			n++
		case "null":
		default:
			return string(typ), false
		}
	}
	return string(typ), n > 0
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return s != ""
}
