package mcp

import (
	"strings"
	"testing"
)

func TestParseMessage(t *testing.T) {
	for _, tt := range []struct {
		body, err      string
		method, id, ps string
	}{
		{body: `{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"x"}}`, method: "tools/call", id: `a"b`, ps: `{"name":"x"}`},
		{body: ` {"jsonrpc":"2.0","id":7,"method":"ping"} `, method: "ping", id: "7"},
		{body: `{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}`, method: "notifications/initialized"},
		{body: `{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`, method: "b", id: "1"},
		{body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, err: "not a JSON-RPC message: unexpected end"},
		{body: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, err: "batches are not accepted"},
		{body: `"ping"`, err: "not a JSON object"},
		{body: `{"jsonrpc":"2.0","id":1,"method":3}`, err: "method is not a string"},
	} {
		m, err := parseMessage([]byte(tt.body))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.body, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.body, err)
			continue
		}
		if m.Method != tt.method || (m.ID != nil) != (tt.id != "") || (tt.id != "" && m.idString() != tt.id) || string(m.Params) != tt.ps {
			t.Errorf("%s: method %q id %q params %s", tt.body, m.Method, m.idString(), m.Params)
		}
	}
}
