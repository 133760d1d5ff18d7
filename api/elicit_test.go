package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	mcpxclient "mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/wire"
)

// A REST caller answers a URL-mode elicitation and gets the child's
// notifications/elicitation/complete as an event of its call.
func TestURLElicitationCompleteREST(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.URLServerConfig(t)})
	c := mcpxclient.New(d.Sock, mcpxclient.Options{})
	var got []wire.ElicitationComplete
	res, err := c.Call(t.Context(), mcpxclient.Caller{Cwd: t.TempDir()}, "urls", "open-url", json.RawMessage(`{"url":"https://example.com/a","id":"r-1"}`),
		mcpxclient.CallOptions{
			OnInput: func(_ context.Context, in wire.InputRequest) (wire.InputAnswer, error) {
				return wire.InputAnswer{Action: wire.ActionAccept}, nil
			},
			OnElicitationComplete: func(e wire.ElicitationComplete) { got = append(got, e) },
		})
	if err != nil || !strings.Contains(string(res), `"accept"`) {
		t.Fatalf("call: %s, %v", res, err)
	}
	if len(got) != 1 || got[0] != (wire.ElicitationComplete{Server: "urls", ElicitationID: "r-1"}) {
		t.Errorf("elicitation-complete events %+v, want one for r-1 of urls", got)
	}
}
