package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// TestHTTPErrorAnswers: a 2026-07-28 server refuses requests with an HTTP
// error status and a JSON-RPC error in the body (SEP-2575, SEP-2164). The
// session keeps the server's error: a first probe refused with -32022
// naming 2026-07-28 among the supported versions is sent again (never
// initialize, which carries neither the version header nor _meta);
// -32021 and -32602 arrive with their data; a body that answers another
// request stays an HTTP status error.
func TestHTTPErrorAnswers(t *testing.T) {
	var mu sync.Mutex
	var seen []string // method, header version, _meta version
	probes := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage
			Method string
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
		}
		json.NewDecoder(r.Body).Decode(&msg)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %s", msg.Method, r.Header.Get(jsonrpc.HeaderProtocolVersion), msg.Params.Meta[jsonrpc.MetaProtocolVersion]))
		if msg.Method == "server/discover" {
			probes++
		}
		first := probes == 1
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		answer := func(status int, body string) {
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, msg.ID, body)
		}
		switch {
		case msg.Method == "server/discover" && first:
			answer(400, `"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"x"}}`)
		case msg.Method == "server/discover":
			answer(200, `"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"resources":{}},"serverInfo":{"name":"s","version":"1"}}`)
		case msg.Method == "tools/call":
			answer(400, `"error":{"code":-32021,"message":"missing capability","data":{"requiredCapabilities":{"sampling":{}}}}`)
		case msg.Method == "resources/read":
			answer(400, `"error":{"code":-32602,"message":"Resource not found","data":{"uri":"test://none"}}`)
		default: // an answer to no request of the client's
			w.WriteHeader(400)
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":"other","error":{"code":-32600,"message":"nope"}}`)
		}
	}))
	t.Cleanup(ts.Close)
	s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, ts.Client()), Options{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer s.Close()
	if s.Era() != EraStateless {
		t.Errorf("era %s, want %s after the refused first probe", s.Era(), EraStateless)
	}
	_, err = s.CallTool(t.Context(), "needs-sampling", nil, nil)
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMissingCapability || string(rpc.Data) != `{"requiredCapabilities":{"sampling":{}}}` {
		t.Errorf("tools/call error = %#v, want the server's -32021 with its data", err)
	}
	_, err = s.ReadResource(t.Context(), "test://none")
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || string(rpc.Data) != `{"uri":"test://none"}` {
		t.Errorf("resources/read error = %#v, want the server's -32602 with data.uri", err)
	}
	_, err = s.Call(t.Context(), "prompts/list", nil, nil)
	var hs *HTTPStatusError
	if !errors.As(err, &hs) || hs.StatusCode != 400 {
		t.Errorf("prompts/list error = %#v, want the HTTP 400 (its body answers another id)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		`server/discover 2026-07-28 "2026-07-28"`, `server/discover 2026-07-28 "2026-07-28"`,
		`tools/list 2026-07-28 "2026-07-28"`, // the call's headers need the tool's definition
		`tools/call 2026-07-28 "2026-07-28"`, `resources/read 2026-07-28 "2026-07-28"`, `prompts/list 2026-07-28 "2026-07-28"`,
	}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
}

// TestHTTPInvalidToolHeaders: over Streamable HTTP at 2026-07-28 a tool
// whose x-mcp-header annotations are invalid (SEP-2243) is left out of
// Tools and a call to it is refused without reaching the server; the
// valid tool beside it is listed, and its annotated argument mirrored;
// the caller's log level goes in the call's _meta.
func TestHTTPInvalidToolHeaders(t *testing.T) {
	var mu sync.Mutex
	var calls []string // tool name, Mcp-Param-Region
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage
			Method string
			Params struct {
				Name string
				Meta map[string]json.RawMessage `json:"_meta"`
			}
		}
		json.NewDecoder(r.Body).Decode(&msg)
		w.Header().Set("Content-Type", "application/json")
		var result string
		switch msg.Method {
		case "server/discover":
			result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`
		case "tools/list":
			result = `{"tools":[
				{"name":"valid_tool","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}},
				{"name":"invalid_number_header","inputSchema":{"type":"object","properties":{"score":{"type":"number","x-mcp-header":"Score"}}}},
				{"name":"invalid_colon_in_name","inputSchema":{"type":"object","properties":{"value":{"type":"string","x-mcp-header":"Region:Primary"}}}}]}`
		case "tools/call":
			mu.Lock()
			calls = append(calls, fmt.Sprintf("%s %s %s", msg.Params.Name, r.Header.Get("Mcp-Param-Region"), msg.Params.Meta[jsonrpc.MetaLogLevel]))
			mu.Unlock()
			result = `{"content":[]}`
		default:
			w.WriteHeader(http.StatusAccepted)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(ts.Close)
	s, err := Connect(t.Context(), NewHTTP(ts.URL, nil, ts.Client()), Options{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer s.Close()
	// The call comes before any listing: the session lists to know.
	_, err = s.CallTool(t.Context(), "invalid_colon_in_name", json.RawMessage(`{"value":"x"}`), nil)
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, "Region:Primary") {
		t.Errorf("calling the invalid tool: %v, want -32602 saying why", err)
	}
	tools, err := s.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var listed []struct{ Name string }
	json.Unmarshal(tools, &listed)
	if len(listed) != 1 || listed[0].Name != "valid_tool" {
		t.Errorf("tools = %s, want valid_tool alone", tools)
	}
	if _, err := s.CallTool(t.Context(), "valid_tool", json.RawMessage(`{"region":"eu"}`), nil); err != nil {
		t.Fatal(err)
	}
	// A caller's log level reaches the child in _meta (SEP-2575).
	ctx := WithCallerCapabilities(t.Context(), CallerCapabilities{LogLevel: "info"})
	if _, err := s.CallTool(ctx, "valid_tool", json.RawMessage(`{"region":"us"}`), nil); err != nil {
		t.Fatal(err)
	}
	_, err = s.CallTool(t.Context(), "invalid_number_header", json.RawMessage(`{"score":1.5}`), nil)
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("calling the invalid tool: %v, want -32602", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if d := cmp.Diff([]string{"valid_tool eu ", `valid_tool us "info"`}, calls); d != "" {
		t.Errorf("calls the server got (-want +got):\n%s", d)
	}
}
