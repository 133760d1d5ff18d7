package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"mcpx.dev/mcpx/wire"
)

// nsClientEnv makes this test binary a client (see maybeNSClient): it
// connects to the socket in the variable and asks whoami, lists servers
// and opens an MCP session, printing one nsAnswer per request.
const nsClientEnv = "MCPX_API_TEST_NS_CLIENT"

// nsAnswer is what the ns client prints of one answer.
type nsAnswer struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

func maybeNSClient() {
	sock := os.Getenv(nsClientEnv)
	if sock == "" {
		return
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ns","version":"0"}}}`
	for _, rq := range []struct{ method, path, body string }{
		{"GET", "/v1/whoami", ""},
		{"GET", "/v1/servers", ""},
		{"POST", "/mcp", initialize},
	} {
		req, _ := http.NewRequest(rq.method, "http://mcpx"+rq.path, strings.NewReader(rq.body))
		if rq.body != "" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		req.Header.Set(wire.HeaderClient, "ns-test")
		resp, err := hc.Do(req)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && rq.path == "/mcp" {
			// An SSE stream or a JSON answer: keep the JSON of either.
			if i := strings.Index(string(body), "data: "); i >= 0 {
				data, _, _ := strings.Cut(string(body[i+len("data: "):]), "\n")
				body = []byte(data)
			}
		}
		if !json.Valid(body) {
			body, _ = json.Marshal(string(body))
		}
		out, _ := json.Marshal(nsAnswer{resp.StatusCode, body})
		fmt.Println(string(out))
	}
	os.Exit(0)
}
