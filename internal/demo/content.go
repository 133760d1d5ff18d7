package demo

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var greetPrompt = &mcp.Prompt{
	Name:        "greet",
	Description: "A greeting for someone.",
	Arguments:   []*mcp.PromptArgument{{Name: "name", Description: "who to greet", Required: true}},
}

func greet(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name := req.Params.Arguments["name"]
	if name == "" {
		return nil, fmt.Errorf("greet: argument %q is required", "name")
	}
	return &mcp.GetPromptResult{
		Description: "A greeting for " + name,
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: "Hello, " + name + "!"},
		}},
	}, nil
}

// ReadmeURI is the demo server's one resource.
const ReadmeURI = "demo://readme"

// ReadmeText is the text of ReadmeURI.
const ReadmeText = "mcpx demo server\n\nThe built-in MCP server of mcpx, for trying the broker out and for tests.\n"

var readmeResource = &mcp.Resource{
	URI:         ReadmeURI,
	Name:        "readme",
	Title:       "About the demo server",
	Description: "What the demo server is for.",
	MIMEType:    "text/plain",
	Size:        int64(len(ReadmeText)),
}

func readReadme(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if req.Params.URI != ReadmeURI {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: ReadmeURI, MIMEType: "text/plain", Text: ReadmeText}}}, nil
}
