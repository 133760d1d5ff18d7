package clientgen_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"mcpx.dev/mcpx/clientgen"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The golden corpus: testdata/servers holds, per real server, its tools/list
// result (<server>.json) and the TypeScript generated from it (<server>.ts);
// testdata/cases holds hand-written edge cases as txtar archives of
// tools.json, want.ts and problems. `go test ./clientgen -update` rewrites
// the generated parts. The demo server's list is taken live from a demo child
// on every run, so a change to its schemas shows up as a golden diff.

// wireTool is a tool as tools/list sends it, with the server it belongs to
// in the hand-written cases.
type wireTool struct {
	Server       string          `json:"server,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// InputSchemaText, in hand-written cases only, is an inputSchema
	// that is not JSON.
	InputSchemaText string `json:"inputSchemaText,omitempty"`
}

func toTools(server string, ws []wireTool) []clientgen.Tool {
	var ts []clientgen.Tool
	for _, w := range ws {
		if server != "" {
			w.Server = server
		}
		if w.InputSchemaText != "" {
			w.InputSchema = json.RawMessage(w.InputSchemaText)
		}
		ts = append(ts, clientgen.Tool{Server: w.Server, Name: w.Name, Description: w.Description,
			InputSchema: w.InputSchema, OutputSchema: w.OutputSchema})
	}
	return ts
}

// listTools runs cmd as a stdio MCP server and returns its tools/list
// result's tools array, byte for byte (so member order is the server's),
// and the instructions of its initialize result.
func listTools(t testing.TB, cmd *exec.Cmd) (tools json.RawMessage, instructions string) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		stdin.Close() // the spec's first shutdown step; both servers exit on EOF
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()

	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 16<<20)
	send := func(msg string) {
		if _, err := fmt.Fprintln(stdin, msg); err != nil {
			t.Fatalf("writing to %s: %v (stderr: %s)", cmd.Path, err, stderr.Bytes())
		}
	}
	// await reads messages until the answer to id; at most 100 others
	// (notifications, requests) are skipped.
	await := func(id int) json.RawMessage {
		for range 100 {
			if !lines.Scan() {
				t.Fatalf("%s ended before answering request %d: %v (stderr: %s)", cmd.Path, id, lines.Err(), stderr.Bytes())
			}
			var m struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Fatalf("%s wrote a non-JSON line %q: %v", cmd.Path, lines.Text(), err)
			}
			if m.ID == nil || *m.ID != id || m.Method != "" {
				continue
			}
			if m.Error != nil {
				t.Fatalf("request %d failed: %s", id, m.Error)
			}
			return m.Result
		}
		t.Fatalf("no answer to request %d within 100 messages", id)
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"clientgen-test","version":"0"}}}`)
	var init struct {
		Instructions string `json:"instructions"`
	}
	if err := json.Unmarshal(await(1), &init); err != nil {
		t.Fatal(err)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var res struct {
		Tools      json.RawMessage `json:"tools"`
		NextCursor string          `json:"nextCursor"`
	}
	if err := json.Unmarshal(await(2), &res); err != nil {
		t.Fatal(err)
	}
	if res.NextCursor != "" {
		t.Fatalf("%s pages its tool list; the capture reads one page", cmd.Path)
	}
	return res.Tools, init.Instructions
}

// demoTools lists the tools of a real demo child (this test binary,
// re-executed), and its instructions.
func demoTools(t testing.TB) (json.RawMessage, string) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), demo.EnvServer+"=1")
	return listTools(t, cmd)
}

// capturedServers are the real servers whose tool lists are captured into
// testdata/servers (<server>.json): the npm reference servers and gopls.
var capturedServers = []struct {
	server string
	cmd    func(t *testing.T) *exec.Cmd
}{
	{"everything", npmServer("@modelcontextprotocol/server-everything", false)},
	{"filesystem", npmServer("@modelcontextprotocol/server-filesystem", true)},
	{"gopls", goplsServer},
}

// npmServer runs an installed npm reference server, with an allowed
// directory argument if withDir.
func npmServer(pkg string, withDir bool) func(t *testing.T) *exec.Cmd {
	return func(t *testing.T) *exec.Cmd {
		args := []string{testenv.NPMPackageBin(t, pkg)}
		if withDir {
			args = append(args, t.TempDir())
		}
		return exec.Command(testenv.Node(t), args...)
	}
}

// goplsServer runs `gopls mcp` in an empty module, offline.
func goplsServer(t *testing.T) *exec.Cmd {
	gopls := testenv.Gopls(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gopls, "mcp")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off", "GOTELEMETRY=off", "GOFLAGS=-mod=mod")
	return cmd
}

// capturedList lists a captured server's tools live, indented as its
// testdata file.
func capturedList(t *testing.T, cmd *exec.Cmd) []byte {
	raw, _ := listTools(t, cmd)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	return pretty.Bytes()
}

// TestCapture compares testdata/servers/<server>.json with the tools the
// installed servers list now, so a new gopls or npm package whose schemas
// differ shows up as a diff; with -capture it rewrites the files:
//
//	go test ./clientgen -run TestCapture -capture && go test ./clientgen -update
func TestCapture(t *testing.T) {
	for _, s := range capturedServers {
		t.Run(s.server, func(t *testing.T) {
			got := capturedList(t, s.cmd(t))
			path := filepath.Join("testdata", "servers", s.server+".json")
			if *capture {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (capture it with -capture)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s lists other tools than %s captured (-captured +now); if the installed version changed on purpose, -capture then -update:\n%s", s.server, path, diff)
			}
		})
	}
}

// corpus returns every real server's tools: the live demo child's and the
// captured servers'.
func corpus(t *testing.T) map[string][]clientgen.Tool {
	tools, _ := demoTools(t)
	var ws []wireTool
	if err := json.Unmarshal(tools, &ws); err != nil {
		t.Fatal(err)
	}
	c := map[string][]clientgen.Tool{"demo": toTools("demo", ws)}
	for _, s := range capturedServers {
		c[s.server] = capturedTools(t, s.server)
	}
	return c
}

// capturedTools reads testdata/servers/<server>.json.
func capturedTools(t testing.TB, server string) []clientgen.Tool {
	data, err := os.ReadFile(filepath.Join("testdata", "servers", server+".json"))
	if err != nil {
		t.Fatalf("%v (capture it: go test ./clientgen -run TestCapture -capture)", err)
	}
	var ws []wireTool
	if err := json.Unmarshal(data, &ws); err != nil {
		t.Fatal(err)
	}
	if len(ws) == 0 {
		t.Fatalf("testdata/servers/%s.json lists no tools", server)
	}
	return toTools(server, ws)
}

// checkGolden compares got with the file at path, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; -update rewrites it):\n%s", path, diff)
	}
}

// TestServers compiles each real server's tools and compares the module
// with its golden file. Real servers' schemas compile without problems.
func TestServers(t *testing.T) {
	for server, tools := range corpus(t) {
		t.Run(server, func(t *testing.T) {
			f, problems := clientgen.Compile(tools)
			for _, p := range problems {
				t.Errorf("problem: %s", p)
			}
			if len(f.Types) != len(tools) {
				t.Errorf("got types for %d tools, want %d", len(f.Types), len(tools))
			}
			checkGolden(t, filepath.Join("testdata", "servers", server+".ts"), f.Source)
		})
	}
}

// caseFiles returns the hand-written edge cases.
func caseFiles(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "cases", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no cases in testdata/cases")
	}
	return files
}

// caseTools reads a case's tools.json.
func caseTools(t *testing.T, ar *txtar.Archive) []clientgen.Tool {
	t.Helper()
	for _, f := range ar.Files {
		if f.Name == "tools.json" {
			var ws []wireTool
			if err := json.Unmarshal(f.Data, &ws); err != nil {
				t.Fatalf("tools.json: %v", err)
			}
			return toTools("", ws)
		}
	}
	t.Fatal("the case has no tools.json")
	return nil
}

// TestCases compiles each hand-written case and compares the module and
// the problems with the case's want.ts and problems.
func TestCases(t *testing.T) {
	for _, path := range caseFiles(t) {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, problems := clientgen.Compile(caseTools(t, ar))
			var ps bytes.Buffer
			for _, p := range problems {
				fmt.Fprintln(&ps, p)
			}
			got := map[string][]byte{"want.ts": f.Source, "problems": ps.Bytes()}
			if *update {
				var files []txtar.File
				for _, af := range ar.Files {
					if _, gen := got[af.Name]; !gen {
						files = append(files, af)
					}
				}
				files = append(files, txtar.File{Name: "want.ts", Data: got["want.ts"]}, txtar.File{Name: "problems", Data: got["problems"]})
				ar.Files = files
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for name, data := range got {
				var want []byte
				found := false
				for _, af := range ar.Files {
					if af.Name == name {
						want, found = af.Data, true
					}
				}
				if !found {
					t.Fatalf("the case has no %s (add it with -update)", name)
				}
				if diff := cmp.Diff(string(want), string(data)); diff != "" {
					t.Errorf("%s differs (-want +got; -update rewrites it):\n%s", name, diff)
				}
			}
		})
	}
}

// allTools is every real server's tools, each in its namespace: the live
// demo child's and the captured servers' (server-everything,
// server-filesystem, gopls).
func allTools(b *testing.B) []clientgen.Tool {
	raw, _ := demoTools(b)
	var ws []wireTool
	if err := json.Unmarshal(raw, &ws); err != nil {
		b.Fatal(err)
	}
	tools := toTools("demo", ws)
	for _, s := range capturedServers {
		tools = append(tools, capturedTools(b, s.server)...)
	}
	return tools
}

// BenchmarkCompile compiles every real server's tools into one module of
// declarations.
func BenchmarkCompile(b *testing.B) {
	tools := allTools(b)
	b.ReportMetric(float64(len(tools)), "tools")
	for b.Loop() {
		if f, _ := clientgen.Compile(tools); len(f.Types) != len(tools) {
			b.Fatal("missing types")
		}
	}
}

// BenchmarkClient writes the client module of every real server's tools.
func BenchmarkClient(b *testing.B) {
	tools := allTools(b)
	for b.Loop() {
		if f, _ := clientgen.Client(clientgen.ClientOptions{Tools: tools}); len(f.Types) != len(tools) {
			b.Fatal("missing types")
		}
	}
}
