package main

import (
	"context"
	"net"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envFloor=<host:port> makes this binary serve floorHandler there until its
// stdin closes: the F path, the one-hop floor of an MCP endpoint — a bare
// go-sdk Streamable HTTP server with one tool, echo, in its own process, so
// that it costs what any Go MCP server over HTTP must and nothing more.
const envFloor = "MCPX_BENCH_FLOOR"

type floorIn struct {
	Message string `json:"message"`
}

func floorEcho(_ context.Context, _ *mcp.CallToolRequest, in floorIn) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
}

// floorHandler is go-sdk's Streamable HTTP handler (sessions, the default)
// over one server with the echo tool.
func floorHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes message."}, floorEcho)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

func serveFloor(addr string) int { return serveChildHTTP("tcp", addr, floorHandler(), "floor") }

// freeAddr is a loopback host:port nothing listens on right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
