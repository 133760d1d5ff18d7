package demo

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvProbe=1 (a test flag, like EnvApps) adds tools that probe what the
// server process may reach, for the tests of a confined child
// (docs/sandbox.md):
//
//	read {path}          text = the file's contents; the system's error
//	                     ("open /x: permission denied") as an isError result
//	write {path, text}   writes text to the file (made 0600 if new); "ok",
//	                     or the system's error as an isError result
//	fetch {url, viaProxy} GETs url with Go's default client (which honours
//	                     HTTP_PROXY, HTTPS_PROXY and NO_PROXY); with
//	                     viaProxy, through $HTTP_PROXY whatever the host
//	                     (a loopback one too), if it is set; text = the
//	                     status line and the body, or the error, isError
//
// and the hostile tools of hostile.go.
const EnvProbe = "MCPX_DEMO_PROBE"

const readSchema = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`

const writeSchema = `{"type":"object","properties":{"path":{"type":"string"},"text":{"type":"string"}},"required":["path","text"],"additionalProperties":false}`

const fetchSchema = `{"type":"object","properties":{"url":{"type":"string"},"viaProxy":{"type":"boolean"}},"required":["url"],"additionalProperties":false}`

type fileIn struct {
	Path string `json:"path"`
	Text string `json:"text,omitempty"`
	URL  string `json:"url,omitempty"`
	// ViaProxy sends the request through $HTTP_PROXY, when set, even
	// for a host NO_PROXY names.
	ViaProxy bool `json:"viaProxy,omitempty"`
}

// addProbe installs what EnvProbe adds.
func addProbe(s *mcp.Server) {
	addHostile(s)
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
	mcp.AddTool(s, tool("fetch", "GETs a URL, through the proxy the environment names; the status and body, or the error.", fetchSchema),
		func(ctx context.Context, _ *mcp.CallToolRequest, in fileIn) (*mcp.CallToolResult, any, error) {
			ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", in.URL, nil)
			if err != nil {
				return errorText(err.Error()), nil, nil
			}
			resp, err := fetchClient(in.ViaProxy).Do(req)
			if err != nil {
				return errorText(err.Error()), nil, nil
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			r := text(resp.Status + "\n" + string(b))
			r.IsError = resp.StatusCode >= 400
			return r, nil, nil
		})
}

// fetchClient is Go's default client, or with viaProxy and $HTTP_PROXY
// set one that sends every request there.
func fetchClient(viaProxy bool) *http.Client {
	p, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if !viaProxy || err != nil || p.Host == "" {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(p)}}
}

// errorText is a tool result with isError: true saying msg.
func errorText(msg string) *mcp.CallToolResult {
	r := text(msg)
	r.IsError = true
	return r
}
