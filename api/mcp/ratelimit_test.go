package mcp_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

// TestMCPEndpointRefusesOverTheRate: through the MCP endpoint, with the
// official go-sdk client, a caller over its rate gets a JSON-RPC error
// whose message names the limit and whose data says which, its value and
// when to retry; the owner's session, at the same time, is served.
func TestMCPEndpointRefusesOverTheRate(t *testing.T) {
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "global"}`}), Tokens: is})
	tok := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "carol", Rule: rights.Rule{Servers: []string{"demo"}, Rate: rights.Rate{Count: 2, Per: 3600e9}}}).Token
	c := mcp.NewClient(&mcp.Implementation{Name: "rate-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + d.TCPAddr + "/mcp/demo", HTTPClient: &http.Client{Transport: apitest.Bearer{Token: tok}}, MaxRetries: -1}
	cs, err := c.Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	_, owner := d.ConnectMCP(t, "/mcp/demo", "", nil)
	echo := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
	for i := range 2 {
		if _, err := cs.CallTool(t.Context(), echo); err != nil {
			t.Fatalf("call %d under the rate: %v", i, err)
		}
	}
	_, err = cs.CallTool(t.Context(), echo)
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("third call under 2/h: %v, want a JSON-RPC error", err)
	}
	var data struct {
		Type       string
		Limit      struct{ Kind, Value string }
		RetryAfter int
	}
	if err := json.Unmarshal(we.Data, &data); err != nil {
		t.Fatalf("error data %s: %v", we.Data, err)
	}
	if we.Code != -32029 || !strings.Contains(we.Message, "rate limit of 2/h") || data.Type != wire.ProblemTypeBase+wire.KindRateLimited ||
		data.Limit.Kind != "caller-rate" || data.Limit.Value != "2/h" || data.RetryAfter < 60 {
		t.Errorf("refusal: code %d, message %q, data %s", we.Code, we.Message, we.Data)
	}
	for range 5 {
		if got := apitest.CallText(t, owner, echo); got != "hi" {
			t.Errorf("owner's echo = %q", got)
		}
	}
}
