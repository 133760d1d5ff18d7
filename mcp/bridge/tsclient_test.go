package bridge_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestTypeScriptClient: the official TypeScript SDK's client spawns the
// bridge (this test binary, re-executed) over stdio, as Claude Desktop or
// Cursor spawn `mcpx mcp`, and reaches the go-sdk server through it:
// tools, a call, elicitation and roots (asked both after initialized,
// over the GET stream, and in a call).
func TestTypeScriptClient(t *testing.T) {
	proctest.CheckNoLeaks(t)
	node := testenv.Node(t)
	// The SDK comes with the reference servers' install (testdata/npm).
	everything := testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")
	sdk := ""
	for d := filepath.Dir(everything); d != "/" && d != "."; d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			sdk = filepath.Join(d, "@modelcontextprotocol", "sdk", "dist", "esm")
			break
		}
	}
	if _, err := os.Stat(filepath.Join(sdk, "client", "stdio.js")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed with testdata/npm: %v", err)
	}
	ep := newEndpoint(false)
	srv := httptest.NewServer(ep)
	defer srv.Close()
	defer func() {
		ep.mu.Lock()
		ep.stop()
		ep.mu.Unlock()
	}()

	cmd := exec.CommandContext(t.Context(), node, "testdata/tsclient.mjs", sdk, os.Args[0])
	cmd.Env = append(os.Environ(), serveEnv+"="+srv.URL, proctest.Env(t))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, out)
	}
	var got struct {
		Version string
		Tools   []string
		Echo    string
		Ask     string
		Roots   string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("its output %q: %v", out, err)
	}
	if got.Version != "endpoint" || got.Echo != "hi" || got.Ask != "accept ts to the answer?" || got.Roots != "file:///src/ts" {
		t.Errorf("the TypeScript client saw %+v", got)
	}
	if !slices.Contains(got.Tools, "echo") || !slices.Contains(got.Tools, "region") {
		t.Errorf("tools/list: %q", got.Tools)
	}
	if r := receive(t, ep.initRoots, "the answer to roots/list after initialized"); !slices.Equal(r, []string{"file:///src/ts"}) {
		t.Errorf("roots asked after initialized: %q", r)
	}
	if n := ep.count("DELETE"); n != 1 {
		t.Errorf("%d DELETEs after the client closed, want 1", n)
	}
}
