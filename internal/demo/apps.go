package demo

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvApps=1 (a test flag, like EnvDrift) adds an MCP App and a tool that
// changes the lists:
//
//	show-card {title}   an MCP App's tool (the ui:// resource extension):
//	                    _meta.ui.resourceUri (and the older _meta["ui/resourceUri"])
//	                    name CardURI; text = the title
//	grow                adds a prompt grown-N and a resource demo://grown/N,
//	                    so the server sends prompts and resources list_changed;
//	                    text = N
//	touch {uri}         tells the clients subscribed to uri that it changed
//	                    (notifications/resources/updated); text = uri
//
// and subscriptions: resources/subscribe, or in the 2026-07-28 era a
// subscriptions/listen naming resources (go-sdk keeps the subscribers),
// and the resource CardURI, text/html;profile=mcp-app, whose _meta.ui
// carries a CSP (CardCSP) in its listing and in its contents.
const EnvApps = "MCPX_DEMO_APPS"

// The demo's MCP App: the ui:// resource its show-card tool names.
const (
	CardURI  = "ui://demo/card.html"
	CardMIME = "text/html;profile=mcp-app"
	CardHTML = "<!doctype html><title>card</title><p id=card></p>"
)

// CardCSP is the _meta.ui.csp of CardURI.
var CardCSP = map[string]any{"connectDomains": []any{"https://api.example.com"}, "resourceDomains": []any{"https://cdn.example.com"}}

func cardMeta() mcp.Meta {
	return mcp.Meta{"ui": map[string]any{"csp": CardCSP, "prefersBorder": true}}
}

const touchSchema = `{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"],"additionalProperties":false}`

type touchIn struct {
	URI string `json:"uri"`
}

// subscribable makes a server's resources subscribable: go-sdk keeps who
// subscribed to what; the handlers only accept.
func subscribable(o *mcp.ServerOptions) {
	o.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
	o.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
}

const cardSchema = `{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`

type cardIn struct {
	Title string `json:"title"`
}

// addApps installs what EnvApps adds.
func addApps(s *mcp.Server) {
	card := tool("show-card", "Shows a card with the title (an MCP App: its UI is "+CardURI+").", cardSchema)
	card.Meta = mcp.Meta{"ui": map[string]any{"resourceUri": CardURI, "visibility": []any{"model", "app"}}, "ui/resourceUri": CardURI}
	mcp.AddTool(s, card, func(_ context.Context, _ *mcp.CallToolRequest, in cardIn) (*mcp.CallToolResult, any, error) {
		return text(in.Title), nil, nil
	})
	s.AddResource(&mcp.Resource{URI: CardURI, Name: "card", MIMEType: CardMIME, Meta: cardMeta()},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: CardURI, MIMEType: CardMIME, Text: CardHTML, Meta: cardMeta()}}}, nil
		})
	mcp.AddTool(s, tool("touch", "Tells the clients subscribed to the resource that it changed.", touchSchema),
		func(ctx context.Context, _ *mcp.CallToolRequest, in touchIn) (*mcp.CallToolResult, any, error) {
			if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI}); err != nil {
				return nil, nil, err
			}
			return text(in.URI), nil, nil
		})
	var grown atomic.Int64
	mcp.AddTool(s, tool("grow", "Adds a prompt and a resource (the lists change).", emptySchema),
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			n := grown.Add(1)
			s.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("grown-%d", n)}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "grown"}}}}, nil
			})
			uri := fmt.Sprintf("demo://grown/%d", n)
			s.AddResource(&mcp.Resource{URI: uri, Name: fmt.Sprintf("grown-%d", n), MIMEType: "text/plain"},
				func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "grown"}}}, nil
				})
			return text(fmt.Sprint(n)), nil, nil
		})
}

// addRedescribe gives echo the description and adds the redescribe tool
// (EnvDescribe).
func addRedescribe(s *mcp.Server, description string) {
	mcp.AddTool(s, tool("echo", description, echoSchema), echo)
	mcp.AddTool(s, tool("redescribe", "Replaces echo's description with the given one; the tool list changes.", redescribeSchema),
		func(_ context.Context, _ *mcp.CallToolRequest, in redescribeIn) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, tool("echo", in.Description, echoSchema), echo) // the SDK sends list_changed
			return text("ok"), nil, nil
		})
}

const redescribeSchema = `{"type":"object","properties":{"description":{"type":"string"}},"required":["description"]}`

type redescribeIn struct {
	Description string `json:"description"`
}
