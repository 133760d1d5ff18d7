package demo

import (
	"context"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvFiles=1 (a test flag, like EnvApps) adds tools that touch files, for
// the tests of a confined child (docs/sandbox.md):
//
//	read {path}          text = the file's contents; the system's error
//	                     ("open /x: permission denied") as an isError result
//	write {path, text}   writes text to the file (made 0600 if new); "ok",
//	                     or the system's error as an isError result
const EnvFiles = "MCPX_DEMO_FILES"

const readSchema = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`

const writeSchema = `{"type":"object","properties":{"path":{"type":"string"},"text":{"type":"string"}},"required":["path","text"],"additionalProperties":false}`

type fileIn struct {
	Path string `json:"path"`
	Text string `json:"text,omitempty"`
}

// addFiles installs what EnvFiles adds.
func addFiles(s *mcp.Server) {
	mcp.AddTool(s, tool("read", "Returns a file's contents, or the system's error.", readSchema),
		func(_ context.Context, _ *mcp.CallToolRequest, in fileIn) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return errorText(err.Error()), nil, nil
			}
			return text(string(b)), nil, nil
		})
	mcp.AddTool(s, tool("write", "Writes text to a file; \"ok\", or the system's error.", writeSchema),
		func(_ context.Context, _ *mcp.CallToolRequest, in fileIn) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile(in.Path, []byte(in.Text), 0o600); err != nil {
				return errorText(err.Error()), nil, nil
			}
			return text("ok"), nil, nil
		})
}

// errorText is a tool result with isError: true saying msg.
func errorText(msg string) *mcp.CallToolResult {
	r := text(msg)
	r.IsError = true
	return r
}
