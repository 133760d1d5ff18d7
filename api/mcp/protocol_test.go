//lint:file-ignore SA1019 logging is what the MCP endpoint passes between its clients and children of the handshake era; the 2026-07-28 revision deprecates it with a twelve-month window.

package mcp_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// simulatedLog matches server-everything's simulated log messages
// ("Info-level message", "Alert level-message").
var simulatedLog = regexp.MustCompile(`level.message`)

// Through the MCP endpoint, with the go-sdk client: completion of
// server-everything's prompt argument, its templates, a URL-mode
// elicitation passed to a client that declares url mode, and its log
// messages reaching the client.
func TestEverythingCompletionURLElicitationMCP(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.EverythingConfig(t, nil, nil)})
	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	var logs []*mcp.LoggingMessageParams
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, r.Params)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, r.Params)
			mu.Unlock()
		},
	}
	for _, path := range []string{"/mcp/everything", "/mcp"} {
		_, cs := d.ConnectMCP(t, path, "2025-11-25", opts, t.TempDir())
		res, err := cs.Complete(t.Context(), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: prefixed(path, "completable-prompt")},
			Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"},
		})
		if err != nil || !slices.Equal(res.Completion.Values, []string{"Engineering"}) {
			t.Errorf("%s: completion %+v, %v; want [Engineering]", path, res, err)
		}
		tpl, err := cs.ListResourceTemplates(t.Context(), nil)
		if err != nil || len(tpl.ResourceTemplates) == 0 {
			t.Errorf("%s: templates %+v, %v", path, tpl, err)
		}
		if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Errorf("%s: setLevel: %v", path, err)
		}
		got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: prefixed(path, "trigger-url-elicitation"),
			Arguments: map[string]any{"url": "https://example.com/" + path, "elicitationId": "el" + path}})
		if !strings.Contains(got, "User completed the URL elicitation flow") {
			t.Errorf("%s: url elicitation result %q", path, got)
		}
		// The toggle is the child's (one stdio session): on, or off then on.
		if out := apitest.CallText(t, cs, &mcp.CallToolParams{Name: prefixed(path, "toggle-simulated-logging")}); strings.HasPrefix(out, "Stopped") {
			apitest.CallText(t, cs, &mcp.CallToolParams{Name: prefixed(path, "toggle-simulated-logging")})
		}
		fromChild := func() bool {
			for _, l := range logs {
				if simulatedLog.MatchString(fmt.Sprint(l.Data)) {
					return true
				}
			}
			return false
		}
		testenv.WaitFor(t, "the child's log message", func() bool { mu.Lock(); defer mu.Unlock(); return fromChild() })
		mu.Lock()
		if len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL != "https://example.com/"+path {
			t.Errorf("%s: elicitations %+v, want one in url mode", path, asked)
		}
		for _, l := range logs {
			if simulatedLog.MatchString(fmt.Sprint(l.Data)) && path == "/mcp" && l.Logger != "everything" {
				t.Errorf("on /mcp the child's message has logger %q, want everything (its server)", l.Logger)
			}
		}
		asked, logs = nil, nil
		mu.Unlock()
		cs.Close()
	}
}

// prefixed is name as path lists it: <server>__<name> on /mcp.
func prefixed(path, name string) string {
	if path == "/mcp" {
		return "everything__" + name
	}
	return name
}
