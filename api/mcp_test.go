package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/internal/testing/apitest"
)

// What api does around the MCP endpoint it mounts at /mcp (mcp.go): the
// browser guard of the MCP specification, an unknown server's 404 before
// MCP begins, and the GET stream's end when the drain begins. The
// endpoint's own behaviour is tested beside it, in api/mcp.

// TestMCPBrowserGuard: MCP clients send no Mcpx-Client, and need not; a
// foreign Origin is refused, the listener's own is not; a POST that is not
// JSON (what a web page may send without a preflight) is refused.
func TestMCPBrowserGuard(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(headers map[string]string) *http.Response {
		req, _ := http.NewRequest("POST", "http://"+d.TCPAddr+"/mcp", strings.NewReader(init))
		req.Header.Set("Authorization", "Bearer "+apitest.Token)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			if k == "Host" {
				req.Host = v
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"plain", nil, 200},
		{"own origin", map[string]string{"Origin": "http://" + d.TCPAddr}, 200},
		{"node fetch", map[string]string{"Sec-Fetch-Mode": "cors"}, 200},
		{"foreign origin", map[string]string{"Origin": "http://evil.example"}, 403},
		{"rebinding host", map[string]string{"Host": "evil.example"}, 403},
		{"form post", map[string]string{"Content-Type": "text/plain"}, 415},
		{"no token", map[string]string{"Authorization": ""}, 401},
	} {
		if resp := post(tc.headers); resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
}

func TestMCPUnknownServerIs404(t *testing.T) {
	d := apitest.StartDemo(t, map[string]string{"demo": `{"scope": "global"}`})
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + d.TCPAddr + "/mcp/nope", HTTPClient: &http.Client{Transport: apitest.Bearer{Token: apitest.Token}}, MaxRetries: -1}
	if _, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}); err == nil {
		t.Fatal("connected to a server that does not exist")
	}
}

// TestMCPGetStreamDoesNotHoldTheDrain: an open GET stream is idle, and
// ends when the daemon stops instead of holding the drain to its limit.
func TestMCPGetStreamDoesNotHoldTheDrain(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}), Serve: func(o *api.ServeOptions) { o.DrainTimeout = time.Minute }})
	m := d.RawMCP(t)
	resp := m.Send(t.Context(), "GET", "", "")
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	done := make(chan struct{})
	go func() { d.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the listeners are still draining after 30s: the GET stream holds them")
	}
	if strings.Contains(d.Logs.String(), "draining") {
		t.Errorf("the drain ran out: %s", d.Logs.String())
	}
}
