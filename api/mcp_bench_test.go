package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"net/http"
	"runtime"
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
	d := apitest.Start(b, apitest.Options{Config: apitest.DemoConfig(b, map[string]string{"demo": `{"scope": "global"}`})})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	base := "http://" + d.TCPAddr
	do := func(path, body string, h map[string]string) ([]byte, http.Header) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apitest.Token)
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

// BenchmarkMCPIdleSession reports the daemon's heap per idle MCP session:
// n sessions initialized on /mcp (each with its GET stream open, as
// clients keep one), measured in this process after a GC. b.N is ignored
// beyond the first round: the figure is bytes/session.
//
//	go test -run '^$' -bench MCPIdleSession -benchtime 1x ./api
func BenchmarkMCPIdleSession(b *testing.B) {
	const n = 200
	d := apitest.Start(b, apitest.Options{Config: apitest.DemoConfig(b, map[string]string{"demo": `{"scope": "global"}`})})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}
	post := func(body, sid string) string {
		req, _ := http.NewRequest("POST", "http://"+d.TCPAddr+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apitest.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id")
	}
	measure := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for b.Loop() {
		before := measure()
		var bodies []io.Closer
		for range n {
			sid := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"idle","version":"1"}}}`, "")
			post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
			req, _ := http.NewRequest("GET", "http://"+d.TCPAddr+"/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+apitest.Token)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			bodies = append(bodies, resp.Body)
		}
		if d.MCP.Sessions() != n {
			b.Fatalf("%d sessions, want %d", d.MCP.Sessions(), n)
		}
		after := measure()
		b.ReportMetric(float64(after-before)/n, "heap-bytes/session")
		b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
		for _, c := range bodies {
			c.Close()
		}
	}
}
