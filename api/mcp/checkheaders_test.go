package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// TestCheckHeaders: the standard headers against the body, in both eras:
// the name a handshake request's Mcp-Name gives is still checked, a
// stateless request still needs it, and an unknown version is refused.
func TestCheckHeaders(t *testing.T) {
	const stateless = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__echo","_meta":{"` +
		jsonrpc.MetaProtocolVersion + `":"2026-07-28","` + jsonrpc.MetaClientCapabilities + `":{}}}}`
	const handshake = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__echo"}}`
	for _, c := range []struct {
		name, body string
		header     map[string]string
		status     int
		code       string
	}{
		{"handshake", handshake, map[string]string{jsonrpc.HeaderProtocolVersion: "2025-11-25", jsonrpc.HeaderSessionID: "s"}, 0, ""},
		{"handshake, no version header", handshake, map[string]string{jsonrpc.HeaderSessionID: "s"}, 0, ""},
		{"handshake, right name", handshake, map[string]string{jsonrpc.HeaderProtocolVersion: "2025-06-18", jsonrpc.HeaderSessionID: "s", jsonrpc.HeaderName: "demo__echo"}, 0, ""},
		{"handshake, wrong name", handshake, map[string]string{jsonrpc.HeaderSessionID: "s", jsonrpc.HeaderName: "demo__add"}, 400, "-32020"},
		{"handshake, wrong method", handshake, map[string]string{jsonrpc.HeaderSessionID: "s", jsonrpc.HeaderMethod: "prompts/get"}, 400, "-32020"},
		{"unknown version", handshake, map[string]string{jsonrpc.HeaderProtocolVersion: "2020-01-01", jsonrpc.HeaderSessionID: "s"}, 400, "-32022"},
		{"stateless", stateless, map[string]string{jsonrpc.HeaderProtocolVersion: jsonrpc.StatelessVersion, jsonrpc.HeaderMethod: "tools/call", jsonrpc.HeaderName: "demo__echo"}, 0, ""},
		{"stateless, no name", stateless, map[string]string{jsonrpc.HeaderProtocolVersion: jsonrpc.StatelessVersion, jsonrpc.HeaderMethod: "tools/call"}, 400, "-32020"},
		{"stateless, wrong name", stateless, map[string]string{jsonrpc.HeaderProtocolVersion: jsonrpc.StatelessVersion, jsonrpc.HeaderMethod: "tools/call", jsonrpc.HeaderName: "x"}, 400, "-32020"},
		{"stateless, no version header", stateless, map[string]string{jsonrpc.HeaderMethod: "tools/call", jsonrpc.HeaderName: "demo__echo"}, 400, "-32020"},
	} {
		msg, err := parseMessage([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(c.body))
		for k, v := range c.header {
			r.Header.Set(k, v)
		}
		status, resp := checkHeaders(r, msg)
		if status != c.status || !strings.Contains(string(resp), c.code) {
			t.Errorf("%s: %d %s, want %d with %s", c.name, status, resp, c.status, c.code)
		}
	}
}
