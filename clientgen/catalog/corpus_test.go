package catalog_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/clientgen/catalog"
	"mcpx.dev/mcpx/internal/demo"
)

// corpus returns real servers' tools: the demo server's, listed from it
// in process, and those of the npm reference servers and gopls as
// clientgen's TestCapture captured them (../clientgen/testdata/servers).
func corpus(t *testing.T) map[string][]catalog.Tool {
	c := map[string][]catalog.Tool{"demo": demoTools(t)}
	for _, server := range []string{"everything", "filesystem", "gopls"} {
		c[server] = capturedTools(t, server)
	}
	return c
}

// demoTools lists the demo server's tools over in-memory transports.
func demoTools(t *testing.T) []catalog.Tool {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := demo.NewServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "catalog-test", Version: "0"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var tools []catalog.Tool
	for _, tool := range res.Tools {
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, catalog.Tool{Server: "demo", Name: tool.Name, Description: tool.Description, InputSchema: schema})
	}
	if len(tools) == 0 {
		t.Fatal("the demo server lists no tools")
	}
	return tools
}

// capturedTools reads ../clientgen/testdata/servers/<server>.json.
func capturedTools(t *testing.T, server string) []catalog.Tool {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "servers", server+".json"))
	if err != nil {
		t.Fatalf("%v (capture it: go test ./clientgen -run TestCapture -capture)", err)
	}
	var ws []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(data, &ws); err != nil {
		t.Fatal(err)
	}
	if len(ws) == 0 {
		t.Fatalf("%s lists no tools", server)
	}
	tools := make([]catalog.Tool, len(ws))
	for i, w := range ws {
		tools[i] = catalog.Tool{Server: server, Name: w.Name, Description: w.Description, InputSchema: w.InputSchema}
	}
	return tools
}
