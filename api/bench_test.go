package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// envManyTools makes this test binary an MCP server with that many tools
// (maybeManyTools), each with schemas like the filesystem server's
// edit_file: nested objects in arrays, a $ref, enums, defaults, and an
// outputSchema.
const envManyTools = "MCPX_TEST_MANY_TOOLS"

func maybeManyTools() {
	n, _ := strconv.Atoi(os.Getenv(envManyTools))
	if n <= 0 {
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "0"}, nil)
	in := json.RawMessage(`{"type": "object",
		"$defs": {"edit": {"type": "object", "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}}, "required": ["oldText", "newText"]}},
		"properties": {"path": {"type": "string", "description": "the file"}, "edits": {"type": "array", "items": {"$ref": "#/$defs/edit"}},
		"mode": {"enum": ["a", "b", "c"], "default": "a"}, "dryRun": {"type": "boolean", "default": false}}, "required": ["path", "edits"]}`)
	out := json.RawMessage(`{"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"], "additionalProperties": false}`)
	for i := range n {
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool-%d", i), Description: "Make line-based edits to a text file.",
			InputSchema: in, OutputSchema: out, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{StructuredContent: map[string]any{"content": ""}}, nil
			})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// BenchmarkToolsOpenAPI500 serves the combined document of 500 tools (10
// servers of 50, real children) over HTTP on the unix socket: built anew
// for every request (cold) or from the cache (cached), and sent as it is
// (identity), gzip or zstd. wire-bytes is the body as sent; doc-bytes the
// document. The children's tool lists are cached by the broker's sessions
// in both cases, so cold is the document build plus the HTTP answer.
//
//	go test -run '^$' -bench ToolsOpenAPI500 -count 5 ./api
func BenchmarkToolsOpenAPI500(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	servers := map[string]any{}
	for i := range 10 {
		servers[fmt.Sprint("server", i)] = map[string]any{"command": exe, "scope": "global",
			"env": map[string]string{envManyTools: "50", proctest.MarkerEnv: proctest.Marker(b)}}
	}
	raw, _ := json.Marshal(map[string]any{"servers": servers})
	cfg, err := config.Parse(raw, "many.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"cold", "cached"} {
		handler := api.New
		if mode == "cold" {
			handler = api.NewColdToolDocs // every tool document built anew
		}
		d := apitest.Start(b, apitest.Options{Config: cfg, Handler: handler})
		get := func(b *testing.B, enc string) int {
			req, _ := http.NewRequestWithContext(b.Context(), "GET", d.Unix.Base+"/v1/openapi.json", nil)
			req.Header.Set("Accept-Encoding", enc)
			resp, err := d.Unix.HTTP.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("status %d, %v", resp.StatusCode, err)
			}
			if got := resp.Header.Get("Content-Encoding"); got != enc && !(enc == "identity" && got == "") {
				b.Fatalf("asked for %s, got %q", enc, got)
			}
			return int(n)
		}
		get(b, "identity") // start the children and list their tools outside the timing
		for _, enc := range []string{"identity", "gzip", "zstd"} {
			b.Run(mode+"/"+enc, func(b *testing.B) {
				var n int
				for b.Loop() {
					n = get(b, enc)
				}
				b.ReportMetric(float64(n), "wire-bytes")
			})
		}
	}
}
