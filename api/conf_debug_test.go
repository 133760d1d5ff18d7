package api_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/internal/conformance"
	"mcpx.dev/mcpx/internal/proctest"
)

func TestConfDebug(t *testing.T) {
	proctest.CheckNoLeaks(t)
	bin := conformance.EverythingBinary(t)
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"everything": map[string]any{
		"command": bin, "scope": "global", "sampling": true, "protocol": os.Getenv("PROTO"),
		"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t)},
	}}})
	cfg, _ := config.Parse(doc, "conformance.json")
	d := startDaemon(t, daemonOptions{cfg: cfg})
	res := conformance.Run(t, conformance.Proxy(t, "http://"+d.tcpAddr+"/mcp/everything", testToken), conformance.Options{Scenarios: strings.Split(os.Getenv("SCEN"), ","), SpecVersion: os.Getenv("SPEC")})
	t.Logf("%s", conformance.Table(res))
	for n, r := range res {
		t.Logf("%s: %s", n, r)
	}
	if os.Getenv("LOGS") != "" {
		t.Logf("%s", d.logs.String())
	}
}

func TestConfDebug2(t *testing.T) {
	bin := conformance.EverythingBinary(t)
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"everything": map[string]any{
		"command": bin, "scope": "global", "sampling": true, "protocol": os.Getenv("PROTO"),
		"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t)},
	}}})
	cfg, _ := config.Parse(doc, "conformance.json")
	d := startDaemon(t, daemonOptions{cfg: cfg})
	opts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		t.Logf("asked: %+v", r.Params)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "x", "email": "a@b.c"}}, nil
	}}
	_, cs := mcpClient(t, d, "/mcp/everything", "2025-11-25", opts)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "hi"}})
	b, _ := json.Marshal(res)
	t.Logf("%s %v", b, err)
}
