package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/testenv"
)

// The reference servers of the TypeScript SDK, installed by
// `npm ci --prefix testdata/npm` (.ci/run does it). They are real peers
// written against another SDK: what they accept, mcpx must send.

// npmServer returns the entry point of an installed reference server; a
// missing one (or node) skips the test, or fails it with MCPX_REQUIRE_DEPS=1.
func npmServer(t *testing.T, pkg string) string {
	t.Helper()
	testenv.Node(t)
	return testenv.NPMPackageBin(t, "@modelcontextprotocol/"+pkg)
}

// startNode runs node with args as a stdio MCP child; the test fails unless
// it is gone at the end.
func startNode(t *testing.T, env []string, args ...string) (*child, Transport) {
	t.Helper()
	return startProc(t, "", env, "node", args...)
}

// startProc runs name with args in dir ("" = ours) as a stdio MCP child;
// the test fails unless it is gone at the end.
func startProc(t testing.TB, dir string, env []string, name string, args ...string) (*child, Transport) {
	t.Helper()
	c := &child{exited: make(chan struct{})}
	c.cmd = exec.Command(name, args...)
	c.cmd.Dir = dir
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr = &c.stderr
	stdin, err := c.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		stdin.Close() // the spec's first shutdown step; the demo exits on EOF
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second): // a node child that ignores stdin EOF
			c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c, NewStdio(stdout, stdin)
}

func TestEverythingStdio(t *testing.T) {
	js := npmServer(t, "server-everything")
	root := t.TempDir()
	c, tr := startNode(t, nil, js, "stdio")
	s, err := Connect(t.Context(), tr, Options{Root: root, ProbeWait: npmProbeWait})
	if err != nil {
		t.Fatalf("Connect: %v (stderr: %s)", err, c.stderr.String())
	}
	defer s.Close()
	t.Logf("server-everything speaks %s", s.ProtocolVersion())

	tools, err := s.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"echo"`, `"get-roots-list"`, `"trigger-long-running-operation"`} {
		if !bytes.Contains(tools, []byte(want)) {
			t.Errorf("Tools lacks %s", want)
		}
	}

	res, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"héllo"}`), nil)
	if err != nil || !strings.Contains(toolText(t, res), "héllo") {
		t.Errorf("echo = %s, %v", res, err)
	}

	// The server asks roots/list and reports our root.
	res, err = s.CallTool(t.Context(), "get-roots-list", nil, nil)
	if err != nil || !strings.Contains(toolText(t, res), FileURI(root)) {
		t.Errorf("get-roots-list = %s, %v; want it to list %s", res, err, FileURI(root))
	}

	var progress int
	res, err = s.CallTool(t.Context(), "trigger-long-running-operation", json.RawMessage(`{"duration":0.03,"steps":3}`), func(json.RawMessage) { progress++ })
	if err != nil || !strings.Contains(toolText(t, res), "completed") {
		t.Errorf("long-running operation = %s, %v", res, err)
	}
	if progress != 3 {
		t.Errorf("got %d progress notifications, want 3", progress)
	}

	// Resources come in pages: all of them, joined.
	resources, err := s.Resources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var rs []struct{ URI string }
	if err := json.Unmarshal(resources, &rs); err != nil || len(rs) == 0 {
		t.Fatalf("Resources = %s, %v", truncate(resources, 300), err)
	}
	if res, err := s.ReadResource(t.Context(), rs[0].URI); err != nil || !bytes.Contains(res, []byte(`"contents"`)) {
		t.Errorf("ReadResource(%s) = %s, %v", rs[0].URI, truncate(res, 300), err)
	}
	if prompts, err := s.Prompts(t.Context()); err != nil || len(prompts) < 3 {
		t.Errorf("Prompts = %s, %v", prompts, err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func TestEverythingStreamableHTTP(t *testing.T) {
	js := npmServer(t, "server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c, _ := startNode(t, []string{fmt.Sprint("PORT=", port)}, js, "streamableHttp")
	// An HTTP server does not stop at stdin EOF; runs before startNode's wait.
	t.Cleanup(func() { c.cmd.Process.Signal(syscall.SIGTERM) })
	// Wait for the listener (the server says so on stderr).
	for !strings.Contains(c.stderr.String(), "listening") {
		select {
		case <-c.exited:
			t.Fatalf("server exited: %s", c.stderr.String())
		case <-t.Context().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	s, err := Connect(t.Context(), NewHTTP(fmt.Sprintf("http://127.0.0.1:%d/mcp", port), nil, nil), Options{Root: "/srv/some app"})
	if err != nil {
		t.Fatalf("Connect: %v (stderr: %s)", err, c.stderr.String())
	}
	res, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"over http"}`), nil)
	if err != nil || !strings.Contains(toolText(t, res), "over http") {
		t.Errorf("echo = %s, %v", res, err)
	}
	res, err = s.CallTool(t.Context(), "get-roots-list", nil, nil)
	if err != nil || !strings.Contains(toolText(t, res), "file:///srv/some%20app") {
		t.Errorf("get-roots-list = %s, %v", res, err)
	}
	var progress int
	if _, err := s.CallTool(t.Context(), "trigger-long-running-operation", json.RawMessage(`{"duration":0.03,"steps":3}`), func(json.RawMessage) { progress++ }); err != nil || progress != 3 {
		t.Errorf("long-running operation: %v, %d progress notifications", err, progress)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close (DELETE): %v", err)
	}
}

func TestFilesystemUsesRoot(t *testing.T) {
	js := npmServer(t, "server-filesystem")
	root := filepath.Join(t.TempDir(), "my project")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hi from the root"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Started with another directory: the client's roots replace it.
	c, tr := startNode(t, nil, js, t.TempDir())
	s, err := Connect(t.Context(), tr, Options{Root: root, ProbeWait: npmProbeWait})
	if err != nil {
		t.Fatalf("Connect: %v (stderr: %s)", err, c.stderr.String())
	}
	defer s.Close()
	// The server fetches roots after notifications/initialized, without a
	// signal to us: ask until it has them.
	for {
		res, err := s.CallTool(t.Context(), "list_allowed_directories", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(toolText(t, res), root) {
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("allowed directories never became the root: %s", toolText(t, res))
		case <-time.After(10 * time.Millisecond):
		}
	}
	res, err := s.CallTool(t.Context(), "read_text_file", json.RawMessage(`{"path":`+string(mustJSON(t, filepath.Join(root, "hello.txt")))+`}`), nil)
	if err != nil || !strings.Contains(toolText(t, res), "hi from the root") {
		t.Errorf("read_text_file = %s, %v", res, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGopls drives `gopls mcp`, whose workspace is its working directory.
func TestGopls(t *testing.T) {
	gopls := testenv.Gopls(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "m.go"), []byte("// Package m greets.\npackage m\n\n// Hello greets.\nfunc Hello() string { return \"hi\" }\n"), 0o644)
	c, tr := startProc(t, dir, []string{"GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}, gopls, "mcp")
	s, err := Connect(t.Context(), tr, Options{Root: dir, ProbeWait: npmProbeWait})
	if err != nil {
		t.Fatalf("Connect: %v (stderr: %s)", err, c.stderr.String())
	}
	defer s.Close()
	tools, err := s.Tools(t.Context())
	if err != nil || !bytes.Contains(tools, []byte(`"go_package_api"`)) {
		t.Fatalf("Tools = %s, %v", truncate(tools, 300), err)
	}
	res, err := s.CallTool(t.Context(), "go_package_api", json.RawMessage(`{"packagePaths":["example.com/m"]}`), nil)
	if err != nil || !strings.Contains(string(res), "Hello") {
		t.Errorf("go_package_api = %s, %v", truncate(res, 500), err)
	}
}

// npmProbeWait is the era probe's wait for node children: node starts in
// well under a second on a quiet machine and in more than the default 5 s
// on a loaded one (seen at load ~18), and the probe's wait is not what
// these tests are about.
const npmProbeWait = time.Minute
