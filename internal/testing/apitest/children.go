package apitest

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// envURLServer, set, makes MaybeServe serve the URL server.
const envURLServer = "MCPX_TEST_URL_SERVER"

// MaybeServe serves, in a child this package's configs start (this test
// binary re-executed), its MCP server on stdio and exits; elsewhere it
// returns. Call it first in TestMain.
func MaybeServe() {
	if os.Getenv(envURLServer) != "" {
		serveURLs()
	}
}

// URLServerConfig serves "urls", a 2025-11-25 server (global) whose tool
// open-url ({url, id}) asks for a URL-mode elicitation and, on accept,
// sends notifications/elicitation/complete before answering the action.
func URLServerConfig(t testing.TB) *config.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"urls": map[string]any{
		"command": exe, "scope": "global", "protocol": "handshake",
		"env": map[string]string{envURLServer: "1", proctest.MarkerEnv: proctest.Marker(t)},
	}}})
	cfg, err := config.Parse(doc, "urls.json")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serveURLs serves URLServerConfig's server on stdio and exits.
func serveURLs() {
	s := mcp.NewServer(&mcp.Implementation{Name: "urls", Version: "0"}, nil)
	type in struct {
		URL string `json:"url"`
		ID  string `json:"id"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "open-url", Description: "Asks the user to open url."},
		func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: a.URL, ElicitationID: a.ID})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
			}
			if res.Action == "accept" {
				if err := req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: a.ID}); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
