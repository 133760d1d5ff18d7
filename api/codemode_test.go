//lint:file-ignore SA1019 roots are how an MCP client of the handshake era says its cwd, which code mode's run uses.

package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/auth"
	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// Code mode on /mcp: search and run, through the TypeScript SDK client and
// the go-sdk client, with run confined by deno for a grant-limited caller.

// denoBin is deno from testdata/npm (its package's bin is a node wrapper;
// the binary lies beside it).
func denoBin(t *testing.T) string {
	return filepath.Join(filepath.Dir(testenv.NPMPackageBin(t, "deno")), "deno")
}

// startCodeDaemon serves the demo (cwd scope) and "secret" with code mode's
// runtime deno, and a token issuer.
func startCodeDaemon(t *testing.T) (*apitest.Daemon, string) {
	t.Helper()
	return startCodeDaemonWith(t, codeConfig(t))
}

// codeConfig serves the demo (cwd scope) and "secret".
func codeConfig(t *testing.T) *config.Config {
	return apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`, "secret": `{"scope": "global"}`})
}

// startCodeDaemonWith is startCodeDaemon serving cfg's servers.
func startCodeDaemonWith(t *testing.T, cfg *config.Config) (*apitest.Daemon, string) {
	t.Helper()
	proctest.CheckNoLeaks(t)
	is, err := auth.Open(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.MCP.Runtime = denoBin(t)
	d := apitest.Start(t, apitest.Options{Config: cfg, Tokens: is, StateDir: t.TempDir()})
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d, root
}

func TestMCPCodeModeTypeScriptSDKClient(t *testing.T) {
	d, root := startCodeDaemon(t)
	script := filepath.Join(testenv.RepoRoot(t), "testdata", "npm", "clients", "mcp-code-mode.mjs")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testenv.Node(t), script, "http://"+d.TCPAddr+"/mcp?mode=code", apitest.Token, root).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("the TypeScript client: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got struct {
		Tools  []string `json:"tools"`
		Search string   `json:"search"`
		Code   string   `json:"code"`
		Run    struct {
			Value    json.RawMessage `json:"value"`
			ExitCode int             `json:"exitCode"`
			Calls    []struct {
				Server, Tool, Outcome string
			} `json:"calls"`
		} `json:"run"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !slices.Equal(got.Tools, []string{"search", "run"}) {
		t.Errorf("code mode lists %v, want search and run only", got.Tools)
	}
	if !strings.Contains(got.Search, "await demo.add({a: number, b: number})") {
		t.Errorf("search answered:\n%s\nwant the demo's add as the script calls it", got.Search)
	}
	if got.IsError || got.Run.ExitCode != 0 || string(got.Run.Value) != `{"sum":5}` {
		t.Errorf("run %q: %s", got.Code, out)
	}
	if len(got.Run.Calls) != 1 || got.Run.Calls[0].Server != "demo" || got.Run.Calls[0].Tool != "add" || got.Run.Calls[0].Outcome != "ok" {
		t.Errorf("run's calls: %+v, want the one demo.add", got.Run.Calls)
	}
}

// codeClient connects a go-sdk client as token to /mcp?mode=mode, with
// its one root, in go-sdk's latest revision.
func codeClient(t *testing.T, d *apitest.Daemon, token, mode, root string) *mcp.ClientSession {
	t.Helper()
	return codeClientOver(t, d, apitest.Bearer{Token: token}, mode, root, "")
}

// codeClientOver is codeClient with the HTTP transport rt (which says who
// calls), in the revision version ("" = go-sdk's latest).
func codeClientOver(t *testing.T, d *apitest.Daemon, rt http.RoundTripper, mode, root, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-code", Version: "1"}, nil)
	c.AddRoots(&mcp.Root{URI: "file://" + root, Name: "root"})
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + d.TCPAddr + "/mcp?mode=" + mode, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// runCode calls run and returns its text and whether it is an error.
func runCode(t *testing.T, cs *mcp.ClientSession, code string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatalf("run %q: %v", code, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestMCPCodeModeConfinesAGrant: a caller whose grant says code runs only
// what its rights reach: its servers (not "secret"), through its client and
// through callTool, and its root's files to read (not to write, not another
// directory's, not the daemon's environment); no process, host, native
// code, system information, remote module or npm package. On bun or node
// the kernel confines its run the same way. A caller without the code
// right gets no run.
func TestMCPCodeModeConfinesAGrant(t *testing.T) {
	cfg := codeConfig(t)
	d, root := startCodeDaemonWith(t, cfg)
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(root, "mine.txt"), []byte("in the root"), 0o600)
	os.WriteFile(filepath.Join(outside, "theirs.txt"), []byte("outside"), 0o600)
	t.Setenv("MCPX_CODE_MODE_SECRET", "the daemon's")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".js") {
			w.Header().Set("Content-Type", "application/javascript")
			w.Write([]byte(`export default "reached";`))
			return
		}
		w.Write([]byte("reached"))
	}))
	defer other.Close()

	m := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "ci", Rule: rights.Rule{Servers: []string{"demo"}, Roots: []string{root}, Code: true, MCPMode: "both"}})
	cs := codeClient(t, d, m.Token, "", root)
	if names := toolNames(t, cs); !slices.Contains(names, "run") || !slices.Contains(names, "demo__add") || slices.Contains(names, "secret__echo") {
		t.Fatalf("the grant's mode both lists %v", names)
	}
	if text, isErr := runCode(t, cs, "return (await demo.echo({message: 'hi'})).content[0].text"); isErr || !strings.Contains(text, "hi") {
		t.Fatalf("run of its own server: %q (error %v)", text, isErr)
	}
	if text, isErr := runCode(t, cs, `return Deno.readTextFileSync(`+jsString(filepath.Join(root, "mine.txt"))+`)`); isErr || !strings.Contains(text, "in the root") {
		t.Errorf("run reading its root: %q (error %v)", text, isErr)
	}
	for what, code := range map[string]string{
		"another server's tool":    `return await callTool("secret", "echo", {message: "x"})`,
		"a file outside its roots": `return Deno.readTextFileSync(` + jsString(filepath.Join(outside, "theirs.txt")) + `)`,
		"the daemon's environment": `return Deno.env.get("MCPX_CODE_MODE_SECRET") ?? (() => { throw new Error("unset") })()`,
		"a process":                `return new Deno.Command("true").outputSync().code`,
		"another host":             `return await (await fetch(` + jsString(other.URL) + `)).text()`,
		"a file in its root":       `Deno.writeTextFileSync(` + jsString(filepath.Join(root, "written.txt")) + `, "x")`,
		"native code":              `return String(Deno.dlopen("libc.so.6", {}))`,
		"the system":               `return Deno.hostname()`,
		"a remote module":          `const u = ` + jsString(other.URL+"/m.js") + `; return (await import(u)).default`,
		"an npm package":           `const p = "npm:" + "left-pad"; return String(await import(p))`,
	} {
		text, isErr := runCode(t, cs, code)
		if !isErr || strings.Contains(text, "outside") || strings.Contains(text, "the daemon's") || strings.Contains(text, "reached") {
			t.Errorf("run reaching %s: %q (error %v), want a failure", what, text, isErr)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "written.txt")); err == nil {
		t.Errorf("a confined run wrote in its root")
	}

	// On bun and node the kernel confines the run as deno's permissions
	// do: its own servers and its root to read, not another directory,
	// not the daemon's environment, no other host, no write in its root.
	fsMod := `const fs = await import("node:fs"); `
	for name, bin := range map[string]string{"bun": testenv.NPMPackageBinNamed(t, "bun", "bun"), "node": testenv.Node(t)} {
		setCodeMode(d, cfg, func(m *config.MCP) { m.Runtime = bin })
		if text, isErr := runCode(t, cs, "return (await demo.echo({message: 'hi'})).content[0].text"); isErr || !strings.Contains(text, "hi") {
			t.Errorf("%s: run of its own server: %q (error %v)", name, text, isErr)
		}
		if text, isErr := runCode(t, cs, fsMod+`return fs.readFileSync(`+jsString(filepath.Join(root, "mine.txt"))+`, "utf8")`); isErr || !strings.Contains(text, "in the root") {
			t.Errorf("%s: run reading its root: %q (error %v)", name, text, isErr)
		}
		for what, code := range map[string]string{
			"another server's tool":    `return await callTool("secret", "echo", {message: "x"})`,
			"a file outside its roots": fsMod + `return fs.readFileSync(` + jsString(filepath.Join(outside, "theirs.txt")) + `, "utf8")`,
			"the daemon's environment": `return process.env.MCPX_CODE_MODE_SECRET ?? (() => { throw new Error("unset") })()`,
			"another host":             `return await (await fetch(` + jsString(other.URL) + `)).text()`,
			"a file in its root":       fsMod + `fs.writeFileSync(` + jsString(filepath.Join(root, "written.txt")) + `, "x")`,
		} {
			text, isErr := runCode(t, cs, code)
			if !isErr || strings.Contains(text, "outside") || strings.Contains(text, "the daemon's") || strings.Contains(text, "reached") {
				t.Errorf("%s: run reaching %s: %q (error %v), want a failure", name, what, text, isErr)
			}
			if strings.Contains(what, "file") && !strings.Contains(text, "EACCES") && !strings.Contains(text, "PermissionDenied") {
				t.Errorf("%s: run reaching %s: %q, want the kernel's refusal", name, what, text)
			}
		}
		if _, err := os.Stat(filepath.Join(root, "written.txt")); err == nil {
			t.Errorf("%s: a confined run wrote in its root", name)
		}
	}

	// No code right: mode code falls back to the tools, and run is no tool.
	plain := apitest.Mint(t, d.Unix, wire.TokenRequest{Subject: "plain", Rule: rights.Rule{Servers: []string{"demo"}, Roots: []string{root}, MCPMode: "code"}})
	ps := codeClient(t, d, plain.Token, "code", root)
	if names := toolNames(t, ps); slices.Contains(names, "run") || !slices.Contains(names, "demo__add") {
		t.Errorf("without the code right, mode code lists %v", names)
	}
	if res, err := ps.CallTool(t.Context(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"code": "return 1"}}); err == nil && !res.IsError {
		t.Errorf("run without the code right answered %+v", res)
	}
}

// TestMCPCodeModeSurfaces: the owner's /mcp lists every tool by default,
// search and run beside them with mode=both, and a bad mode is a 400.
func TestMCPCodeModeSurfaces(t *testing.T) {
	d, root := startCodeDaemon(t)
	if names := toolNames(t, codeClient(t, d, apitest.Token, "", root)); slices.Contains(names, "search") || !slices.Contains(names, "demo__add") {
		t.Errorf("default mode lists %v", names)
	}
	if names := toolNames(t, codeClient(t, d, apitest.Token, "both", root)); !slices.Contains(names, "search") || !slices.Contains(names, "run") || !slices.Contains(names, "secret__echo") {
		t.Errorf("mode both lists %v", names)
	}
	r := d.TCP.Do(t, "POST", "/mcp?mode=codes", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if r.StatusCode != 400 || !strings.Contains(string(r.Bytes), "mode") {
		t.Errorf("mode=codes: %d %s", r.StatusCode, r.Bytes)
	}
}

// TestMCPCodeModeFromConfig: the config's "mcp" mode is what /mcp lists
// to a caller that asks for nothing: code, search and run alone; both,
// those beside every tool.
func TestMCPCodeModeFromConfig(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{"code", []string{"run", "search"}},
		{"both", []string{"demo__add", "run", "search", "secret__echo"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			block, err := config.Parse([]byte(`{"mcp": {"mode": "`+tc.mode+`"}, "servers": {}}`), "mcp.json")
			if err != nil {
				t.Fatal(err)
			}
			cfg := codeConfig(t)
			cfg.MCP = block.MCP
			d, root := startCodeDaemonWith(t, cfg)
			names := toolNames(t, codeClient(t, d, apitest.Token, "", root))
			slices.Sort(names)
			if tc.mode == "both" {
				names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(tc.want, n) })
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("mode %s in the config: /mcp lists %v, want %v", tc.mode, names, tc.want)
			}
		})
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// countingTransport counts the bytes of every request and response body,
// an MCP client's whole conversation.
type countingTransport struct {
	token string
	n     atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+c.token)
	if r.ContentLength > 0 {
		c.n.Add(r.ContentLength)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, &c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestCodeModeTokenCost counts what a five-tool task costs a client in
// tokens (four bytes each) over /mcp with the demo and server-everything:
// every tool listed, then five calls, against code mode's two tools, one
// search and one run making the same five calls. Its figures are in
// bench/README.md.
func TestCodeModeTokenCost(t *testing.T) {
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"everything": map[string]any{
		"command": testenv.Node(t), "args": []string{testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")},
		"env": map[string]string{proctest.MarkerEnv: proctest.Marker(t)}, "scope": "global",
	}}})
	every, err := config.Parse(doc, "everything.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := apitest.DemoConfig(t, map[string]string{"demo": `{"scope": "cwd"}`})
	cfg.Servers["everything"] = every.Servers["everything"]
	d, root := startCodeDaemonWith(t, cfg)
	conversation := func(mode string, task func(*mcp.ClientSession)) int64 {
		ct := &countingTransport{token: apitest.Token}
		c := mcp.NewClient(&mcp.Implementation{Name: "count", Version: "1"}, nil)
		c.AddRoots(&mcp.Root{URI: "file://" + root})
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + d.TCPAddr + "/mcp?mode=" + mode, HTTPClient: &http.Client{Transport: ct}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		ct.n.Store(0) // the handshake costs both the same
		task(cs)
		return ct.n.Load()
	}
	call := func(cs *mcp.ClientSession, name string, args map[string]any) {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	tools := conversation("tools", func(cs *mcp.ClientSession) {
		toolNames(t, cs)
		call(cs, "demo__add", map[string]any{"a": 1, "b": 2})
		call(cs, "demo__echo", map[string]any{"message": "one"})
		call(cs, "everything__echo", map[string]any{"message": "two"})
		call(cs, "everything__get-sum", map[string]any{"a": 3, "b": 4})
		call(cs, "demo__cwd", nil)
	})
	code := conversation("code", func(cs *mcp.ClientSession) {
		toolNames(t, cs)
		call(cs, "search", map[string]any{"query": "sum echo add cwd", "limit": 6})
		text, isErr := runCode(t, cs, `const a = await demo.add({a: 1, b: 2});
const e = await demo.echo({message: "one"});
const f = await everything.echo({message: "two"});
const s = await everything.getSum({a: 3, b: 4});
const c = await demo.cwd();
return [a, e, f, s, c].map((r) => r.content[0].text);`)
		if isErr || !strings.Contains(text, "two") {
			t.Fatalf("run: %s", text)
		}
	})
	t.Logf("a five-tool task: %d tokens with every tool listed, %d with code mode (%.1fx fewer)", tools/4, code/4, float64(tools)/float64(code))
	if code >= tools {
		t.Errorf("code mode cost %d bytes, listing every tool %d: code mode should cost less", code, tools)
	}
}
