package api_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestCLIServerOnEverySurface: a cli server (git log and ls wrapped as
// tools) is served by every surface with no code of its own there: its
// tools with their input schema in REST's listing, the server's OpenAPI
// document and the MCP endpoint, and calls through REST and /mcp that
// answer per worktree.
func TestCLIServerOnEverySurface(t *testing.T) {
	testenv.Git(t)
	proctest.CheckNoLeaks(t)
	wts := testenv.Worktrees(t, filepath.Join(t.TempDir(), "repo"), map[string]string{"README": "x"}, "wt1")
	testenv.WriteFiles(t, wts[1], map[string]string{"b.txt": "b"})
	testenv.RunGit(t, wts[1], "add", "-A")
	testenv.RunGit(t, wts[1], "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "second")
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"git": map[string]any{
		"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t)},
		"cli": map[string]any{"tools": map[string]any{
			"log": map[string]any{"description": "commit subjects, newest first", "args": []string{"git", "log", "--format=%s", "-n", "{count}"},
				"input": map[string]any{"type": "object", "properties": map[string]any{"count": map[string]any{"type": "integer", "minimum": 1}}, "required": []string{"count"}}},
			"ls": map[string]any{"args": []string{"ls"}},
		}},
	}}})
	cfg, err := config.Parse(doc, "test.json")
	if err != nil {
		t.Fatal(err)
	}
	d := apitest.Start(t, apitest.Options{Config: cfg})

	want := map[string]string{wts[0]: "initial", wts[1]: "second\ninitial"}
	for _, wt := range wts {
		res := d.Unix.Do(t, "POST", "/v1/servers/git/tools/log", `{"count":3}`, cwdHeader(wt)...).Result(t)
		if res.IsError || strings.TrimSpace(res.Text()) != want[wt] {
			t.Errorf("REST log from %s = %q, want %q", wt, res.Text(), want[wt])
		}
	}
	if res := d.Unix.Do(t, "POST", "/v1/servers/git/tools/log", `{"count":"3"}`, cwdHeader(wts[0])...).Result(t); !res.IsError || !strings.Contains(res.Text(), "argument count") {
		t.Errorf("REST log with a string count = %+v", res)
	}

	var one struct {
		Tools []struct {
			Name        string
			InputSchema json.RawMessage
		}
	}
	d.Unix.Do(t, "GET", "/v1/servers/git/tools", "", cwdHeader(wts[0])...).Decode(t, &one)
	if len(one.Tools) != 2 || one.Tools[0].Name != "log" || !strings.Contains(string(one.Tools[0].InputSchema), `"count":{"minimum":1,"type":"integer"}`) {
		t.Errorf("REST tools = %+v", one.Tools)
	}

	r := d.Unix.Do(t, "GET", "/v1/servers/git/openapi.json", "", cwdHeader(wts[0])...)
	var compact bytes.Buffer
	json.Compact(&compact, r.Bytes)
	if body := compact.String(); r.StatusCode != 200 || !strings.Contains(body, `"/v1/servers/git/tools/log":`) || !strings.Contains(body, "commit subjects, newest first") || !strings.Contains(body, `"count":{"minimum":1,"type":"integer"}`) {
		t.Errorf("the server's OpenAPI document (%d) lacks the tool or its schema: %.600s", r.StatusCode, r.Bytes)
	}

	for i, wt := range wts {
		_, cs := d.ConnectMCP(t, "/mcp", "2025-11-25", nil, wt)
		tools, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var log *mcp.Tool
		for _, tl := range tools.Tools {
			if tl.Name == "git__log" {
				log = tl
			}
		}
		if log == nil {
			t.Fatalf("/mcp tools lack git__log: %+v", tools.Tools)
		}
		if schema, _ := json.Marshal(log.InputSchema); !strings.Contains(string(schema), `"minimum":1`) {
			t.Errorf("/mcp git__log input schema = %s", schema)
		}
		if got := apitest.CallText(t, cs, &mcp.CallToolParams{Name: "git__log", Arguments: map[string]any{"count": 3}}); strings.TrimSpace(got) != want[wt] {
			t.Errorf("/mcp client %d in %s: git__log = %q, want %q", i, wt, got, want[wt])
		}
	}
}
