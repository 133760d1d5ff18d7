package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkMCPvsREST: one warm echo call to a real demo child on the same
// loopback TCP listener, through REST (POST /v1/servers/demo/tools/echo)
// and through the MCP endpoint (tools/call of demo__echo on /mcp, in a
// 2025-11-25 session), raw HTTP both, so that the two differ only in the
// server's path. Compare ns/op within one run.
//
//	go test -run '^$' -bench MCPvsREST -count 5 ./api
func BenchmarkMCPvsREST(b *testing.B) {
	d := startDaemon(b, daemonOptions{cfg: demoConfig(b, map[string]string{"demo": `{"scope": "global"}`})})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	base := "http://" + d.tcpAddr
	do := func(path, body string, h map[string]string) ([]byte, http.Header) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			b.Fatalf("%s: %d %s", path, resp.StatusCode, out)
		}
		return out, resp.Header
	}
	b.Run("rest", func(b *testing.B) {
		rest := map[string]string{"Mcpx-Client": "bench"}
		do("/v1/servers/demo/tools/echo", `{"message":"hi"}`, rest)
		b.ResetTimer()
		for b.Loop() {
			if out, _ := do("/v1/servers/demo/tools/echo", `{"message":"hi"}`, rest); !bytes.Contains(out, []byte("hi")) {
				b.Fatalf("%s", out)
			}
		}
	})
	b.Run("mcp", func(b *testing.B) {
		accept := map[string]string{"Accept": "application/json, text/event-stream"}
		_, h := do("/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`, accept)
		sess := map[string]string{"Accept": accept["Accept"], "Mcp-Session-Id": h.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
		do("/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sess)
		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__echo","arguments":{"message":"hi"}}}`
		do("/mcp", call, sess)
		b.ResetTimer()
		for b.Loop() {
			out, _ := do("/mcp", call, sess)
			var r struct {
				Result json.RawMessage
			}
			if json.Unmarshal(out, &r) != nil || !bytes.Contains(r.Result, []byte("hi")) {
				b.Fatalf("%s", out)
			}
		}
	})
}
