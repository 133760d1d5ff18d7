package api_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// A call carrying Mcpx-Tool-Hash is made only if the tool the child lists
// hashes to it; otherwise it is a 409 stale-client problem naming the tool
// and saying how to regenerate. No header, no check.
func TestToolHashChecked(t *testing.T) {
	d, _ := clientDaemon(t)
	var echo struct {
		InputSchema, OutputSchema json.RawMessage
	}
	json.Unmarshal(firstTool(t, d, "demo", "echo"), &echo)
	right := wire.ToolHash(echo.InputSchema, echo.OutputSchema)

	ok := d.TCP.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`, wire.HeaderToolHash, right)
	if ok.StatusCode != 200 {
		t.Errorf("the current hash: %d %s", ok.StatusCode, ok.Bytes)
	}
	if res := d.TCP.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`); res.StatusCode != 200 {
		t.Errorf("no hash: %d %s", res.StatusCode, res.Bytes)
	}
	stale := d.TCP.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`, wire.HeaderToolHash, "sha256:0000000000000000")
	p := stale.Problem(t)
	if p.Status != 409 || p.Kind() != wire.KindStaleClient || p.Server != "demo" || p.Field != wire.HeaderToolHash ||
		!strings.Contains(p.Detail, `tool "echo" changed`) || !strings.Contains(p.Detail, "mcpx clientgen ts") {
		t.Errorf("a stale hash: %+v", p)
	}
	// Streamed calls are checked the same way, before the stream starts.
	streamed := d.TCP.Do(t, "POST", "/v1/servers/demo/tools/echo", `{"message":"hi"}`,
		wire.HeaderToolHash, "sha256:0000000000000000", "Accept", wire.MediaEventStream)
	if !strings.Contains(string(streamed.Bytes), wire.KindStaleClient) {
		t.Errorf("a streamed call with a stale hash: %d %s", streamed.StatusCode, streamed.Bytes)
	}
}

// firstTool returns the Tool object of server's tool as /v1/servers/{server}/tools lists it.
func firstTool(t *testing.T, d *apitest.Daemon, server, tool string) json.RawMessage {
	t.Helper()
	res := d.TCP.Do(t, "GET", "/v1/servers/"+server+"/tools", "")
	var st wire.ServerTools
	if err := json.Unmarshal(res.Bytes, &st); err != nil {
		t.Fatalf("%s: %v", res.Bytes, err)
	}
	var tools []json.RawMessage
	json.Unmarshal(st.Tools, &tools)
	for _, raw := range tools {
		var named struct{ Name string }
		if json.Unmarshal(raw, &named) == nil && named.Name == tool {
			return raw
		}
	}
	t.Fatalf("%s lists no %s: %s", server, tool, res.Bytes)
	return nil
}

// TestTypeScriptClientStale generates a client, changes the server under it
// (a reload gives the demo server a later version of its tools), and runs
// the old client on node: the removed tool and the changed one each throw an
// McpxError naming the tool and saying the client is stale; an unchanged
// tool still works.
func TestTypeScriptClientStale(t *testing.T) {
	node := testenv.Node(t)
	tsc := testenv.NPMPackageBin(t, "typescript")
	d, stateDir := clientDaemon(t)
	res := d.TCP.Do(t, "GET", "/v1/clients/typescript?servers=demo", "", wire.HeaderCwd, t.TempDir())
	if res.StatusCode != 200 {
		t.Fatalf("GET /v1/clients/typescript: %d %s", res.StatusCode, res.Bytes)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "client.ts"), res.Bytes, 0o644); err != nil {
		t.Fatal(err)
	}
	copyTestdata(t, filepath.Join("testdata", "client", "stale.ts"), filepath.Join(dir, "stale.ts"))
	out := filepath.Join(dir, "js")
	cmd := exec.Command(node, tsc, "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler",
		"--rewriteRelativeImportExtensions", "--types", "", "--skipLibCheck", "--outDir", out,
		filepath.Join(dir, "client.ts"), filepath.Join(dir, "stale.ts"))
	cmd.Env = append(os.Environ(), proctest.Env(t))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, b)
	}
	if err := os.WriteFile(filepath.Join(out, "package.json"), []byte(`{"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	// The server changes: same name, a later version of its tools.
	d.Broker.SetConfig(apitest.DemoConfig(t, map[string]string{
		"demo": `{"env": {"` + demo.EnvDrift + `": "1"}}`,
		"wt":   `{"scope": "worktree"}`,
	}))
	testenv.WaitFor(t, "the reloaded demo server without add", func() bool {
		r := d.TCP.Do(t, "GET", "/v1/servers/demo/tools", "")
		return r.StatusCode == 200 && !strings.Contains(string(r.Bytes), `"name":"add"`)
	})

	run := exec.Command(node, filepath.Join(out, "stale.js"))
	home := t.TempDir()
	run.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + stateDir, proctest.Env(t)}
	run.WaitDelay = 10 * time.Second
	stdout, err := run.Output()
	if err != nil {
		t.Fatalf("node stale.js: %v\n%s", err, stdout)
	}
	type outcome struct {
		Ok      json.RawMessage `json:"ok"`
		Kind    string          `json:"kind"`
		Status  int             `json:"status"`
		Tool    string          `json:"tool"`
		Message string          `json:"message"`
		Other   string          `json:"other"`
	}
	var got struct{ Removed, Changed, Unchanged outcome }
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("the script printed %q: %v", stdout, err)
	}
	if o := got.Removed; o.Kind != wire.KindNotFound || o.Tool != "add" || !strings.Contains(o.Message, `no tool "add"`) ||
		!strings.Contains(o.Message, "regenerate it with `mcpx clientgen ts`") {
		t.Errorf("the removed tool: %+v, want not-found naming add and saying to regenerate", o)
	}
	if o := got.Changed; o.Kind != wire.KindStaleClient || o.Status != 409 || o.Tool != "echo" ||
		!strings.Contains(o.Message, `tool "echo" changed`) || !strings.Contains(o.Message, "mcpx clientgen ts") ||
		!strings.Contains(o.Message, "is stale") {
		t.Errorf("the changed tool: %+v, want stale-client naming echo and saying to regenerate", o)
	}
	if o := got.Unchanged; o.Ok == nil || o.Kind != "" {
		t.Errorf("the unchanged tool: %+v, want a result", o)
	}
}

func copyTestdata(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
