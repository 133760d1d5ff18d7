//lint:file-ignore SA1019 roots are what mcpx gives every child with a root; the 2026-07-28 revision deprecates them with a twelve-month window, and the broker speaks the handshake eras that use them.

package demo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/testenv"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/demo"
)

var allTools = []string{"add", "ask", "big", "counter", "crash", "cwd", "echo", "env", "fail", "init", "pid", "progress", "roots", "sleep", "stderr", "strict"}

func TestListTools(t *testing.T) {
	cs := connectMemory(t, nil, handshake)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
		schema, ok := tool.InputSchema.(map[string]any)
		if !ok || schema["type"] != "object" || schema["additionalProperties"] != false {
			t.Errorf("%s: inputSchema = %s, want a closed object schema", tool.Name, mustJSON(tool.InputSchema))
		}
	}
	slices.Sort(names)
	if diff := cmp.Diff(allTools, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestEcho(t *testing.T) {
	cs := connectMemory(t, nil, handshake)
	if got := callText(t, cs, "echo", map[string]any{"message": "héllo\nworld"}); got != "héllo\nworld" {
		t.Errorf("echo = %q", got)
	}
}

func TestAdd(t *testing.T) {
	cs := connectMemory(t, nil, handshake)
	res := call(t, cs, "add", map[string]any{"a": 2, "b": 3.5})
	if got := textOf(t, res); got != "5.5" {
		t.Errorf("text = %q, want 5.5", got)
	}
	if got := mustJSON(res.StructuredContent); got != `{"sum":5.5}` {
		t.Errorf("structuredContent = %s", got)
	}
}

func TestBadArguments(t *testing.T) {
	cs := connectMemory(t, nil, handshake)
	for _, args := range []map[string]any{
		{},                              // missing required
		{"message": 1},                  // wrong type
		{"message": "x", "extra": true}, // unknown argument
	} {
		// go-sdk v1.8.0 reports argument validation as a tool result with
		// isError (the model can read it and retry), not as -32602.
		res := call(t, cs, "echo", args)
		if !res.IsError || !strings.Contains(textOf(t, res), "validating") {
			t.Errorf("echo %v = %s, want an isError validation result", args, mustJSON(res))
		}
	}
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown tool: err = %v, want JSON-RPC %d", err, jsonrpc.CodeInvalidParams)
	}
}

func TestStrict(t *testing.T) {
	cs := connectMemory(t, nil, handshake)
	if got := callText(t, cs, "strict", map[string]any{"n": 1}); got != "ok" {
		t.Errorf("strict 1 = %q", got)
	}
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "strict", Arguments: map[string]any{"n": 0}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("strict 0: err = %v, want JSON-RPC %d", err, jsonrpc.CodeInvalidParams)
	}
}

func TestFail(t *testing.T) {
	cs := connectMemory(t, nil, handshake)
	res := call(t, cs, "fail", map[string]any{"message": "it broke"})
	if !res.IsError || textOf(t, res) != "it broke" {
		t.Errorf("fail = %s", mustJSON(res))
	}
}

func TestBig(t *testing.T) {
	cs := connectMemory(t, nil, handshake)
	for _, n := range []int{0, 1, 37, 1 << 20} {
		got := callText(t, cs, "big", map[string]any{"bytes": n})
		if len(got) != n {
			t.Errorf("big %d: got %d bytes", n, len(got))
		}
	}
}

func TestProgress(t *testing.T) {
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, req.Params)
	}}
	cs := connectMemory(t, opts, handshake)

	params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": 3, "delayMs": 1}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if text := textOf(t, res); text != "done 3" {
		t.Errorf("progress = %q", text)
	}
	testenv.WaitFor(t, "3 progress notifications", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 3 })
	mu.Lock()
	defer mu.Unlock()
	for i, p := range got {
		if p.ProgressToken != "tok-1" || p.Progress != float64(i+1) || p.Total != 3 {
			t.Errorf("notification %d = %s", i, mustJSON(p))
		}
	}

	// Without a token: no notifications, same answer.
	got = nil
	mu.Unlock()
	text := callText(t, cs, "progress", map[string]any{"steps": 2})
	mu.Lock()
	if text != "done 2" || len(got) != 0 {
		t.Errorf("progress without token = %q with %d notifications", text, len(got))
	}
}

func TestRoots(t *testing.T) {
	root := &mcp.Root{URI: "file:///work/repo", Name: "repo"}
	for _, version := range []string{handshake, "2025-06-18", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "0"}, nil)
			c.AddRoots(root)
			st, ct := mcp.NewInMemoryTransports()
			if _, err := demo.NewServer().Connect(t.Context(), st, nil); err != nil {
				t.Fatal(err)
			}
			cs, err := c.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			var got []*mcp.Root
			if err := json.Unmarshal([]byte(callText(t, cs, "roots", nil)), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]*mcp.Root{root}, got); diff != "" {
				t.Errorf("roots (-want +got):\n%s", diff)
			}
		})
		t.Run(version+"/no-capability", func(t *testing.T) {
			cs := connectMemory(t, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}, version)
			if got := callText(t, cs, "roots", nil); got != "[]" {
				t.Errorf("roots without capability = %s, want []", got)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		cs := connectMemory(t, nil, handshake) // roots capability, no roots
		if got := callText(t, cs, "roots", nil); got != "[]" {
			t.Errorf("roots = %s, want []", got)
		}
	})
}

func TestPromptAndResource(t *testing.T) {
	cs := connectMemory(t, nil, handshake)
	pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ada!" {
		t.Errorf("greet = %s", mustJSON(pr))
	}
	if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet"}); err == nil {
		t.Error("greet without name: no error")
	}
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: demo.ReadmeURI})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].Text != demo.ReadmeText {
		t.Errorf("readme = %s", mustJSON(rr))
	}
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "demo://nope"}); err == nil {
		t.Error("unknown resource: no error")
	}
}

// TestInitRawLine checks that `init` returns the initialize request byte for
// byte as the client wrote it.
func TestInitRawLine(t *testing.T) {
	p := startRun(t, t.Context())
	c := mcp.NewClient(&mcp.Implementation{Name: "raw-test", Version: "9"}, nil)
	cs, err := c.Connect(t.Context(), p.transport, &mcp.ClientSessionOptions{ProtocolVersion: handshake})
	if err != nil {
		t.Fatal(err)
	}
	var info demo.InitInfo
	if err := json.Unmarshal([]byte(callText(t, cs, "init", nil)), &info); err != nil {
		t.Fatal(err)
	}
	firstLine, _, _ := strings.Cut(p.sent.String(), "\n")
	if info.Raw != firstLine {
		t.Errorf("raw = %q\nwant  %q", info.Raw, firstLine)
	}
	if !strings.Contains(firstLine, `"method":"initialize"`) {
		t.Errorf("first line sent is not initialize: %q", firstLine)
	}
	if info.ProtocolVersion != handshake {
		t.Errorf("protocolVersion = %q", info.ProtocolVersion)
	}
	if got := string(info.Capabilities); got != `{"roots":{"listChanged":true}}` {
		t.Errorf("capabilities = %s", got)
	}
	if !strings.Contains(string(info.ClientInfo), `"raw-test"`) {
		t.Errorf("clientInfo = %s", info.ClientInfo)
	}

	// Closing the client closes Run's input: Run returns nil at EOF.
	cs.Close()
	if err := p.wait(t); err != nil {
		t.Errorf("Run after EOF = %v, want nil", err)
	}
}

func TestInitWithoutRawLine(t *testing.T) {
	cs := connectMemory(t, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}, handshake)
	var info demo.InitInfo
	if err := json.Unmarshal([]byte(callText(t, cs, "init", nil)), &info); err != nil {
		t.Fatal(err)
	}
	if info.Raw != "" || string(info.Capabilities) != "{}" || info.ProtocolVersion != handshake {
		t.Errorf("init = %s", mustJSON(info))
	}
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := startRun(t, ctx)
	connect(t, p.transport, nil, handshake)
	cancel()
	if err := p.wait(t); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

func TestChildProcessTools(t *testing.T) {
	dir := t.TempDir()
	c := childCommand(t, "DEMO_TEST_VAR=hello there")
	c.cmd.Dir = dir
	cs := connect(t, &mcp.CommandTransport{Command: c.cmd}, nil, handshake)

	if got := callText(t, cs, "pid", nil); got != strconv.Itoa(c.cmd.Process.Pid) {
		t.Errorf("pid = %s, want %d", got, c.cmd.Process.Pid)
	}
	wantDir, _ := filepath.EvalSymlinks(dir)
	if got := callText(t, cs, "cwd", nil); got != wantDir {
		t.Errorf("cwd = %s, want %s", got, wantDir)
	}
	if got := callText(t, cs, "env", map[string]any{"name": "DEMO_TEST_VAR"}); got != "hello there" {
		t.Errorf("env = %q", got)
	}
	if got := callText(t, cs, "env", map[string]any{"name": "DEMO_TEST_UNSET"}); got != "" {
		t.Errorf("env of unset var = %q", got)
	}
	if got := callText(t, cs, "stderr", map[string]any{"text": "to stderr\n"}); got != "ok" {
		t.Errorf("stderr = %q", got)
	}
	testenv.WaitFor(t, "stderr text", func() bool { return strings.Contains(c.stderr.String(), "to stderr\n") })

	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code after EOF = %d, want 0", code)
	}
}

func TestSleep(t *testing.T) {
	cs := connectMemory(t, nil, handshake)
	if got := callText(t, cs, "sleep", map[string]any{"ms": 1}); got != "slept 1ms" {
		t.Errorf("sleep = %q", got)
	}
}

func TestSleepCancelled(t *testing.T) {
	cs, c := startChild(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 600000}})
		errc <- err
	}()
	testenv.WaitFor(t, "the sleep to start", func() bool { return strings.Contains(c.stderr.String(), "sleeping 600000ms") })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call = %v", err)
	}
	testenv.WaitFor(t, `"cancelled sleep" on stderr`, func() bool { return strings.Contains(c.stderr.String(), "cancelled sleep\n") })
	// The session survives the cancelled call.
	if got := callText(t, cs, "echo", map[string]any{"message": "still here"}); got != "still here" {
		t.Errorf("echo after cancel = %q", got)
	}
}

func TestCrash(t *testing.T) {
	for _, tc := range []struct {
		args map[string]any
		code int
	}{
		{map[string]any{"code": 7, "stderr": "dying now\n"}, 7},
		{map[string]any{}, demo.DefaultCrashCode},
		{map[string]any{"code": 0}, 0},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			cs, c := startChild(t, nil)
			_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "crash", Arguments: tc.args})
			if err == nil {
				t.Fatal("crash answered")
			}
			cs.Close()
			if got := c.cmd.ProcessState.ExitCode(); got != tc.code {
				t.Errorf("exit code = %d, want %d", got, tc.code)
			}
			if want, _ := tc.args["stderr"].(string); !strings.Contains(c.stderr.String(), want) {
				t.Errorf("stderr = %q, want %q", c.stderr, want)
			}
		})
	}
}

func TestExitAtStart(t *testing.T) {
	c := childCommand(t, demo.EnvExitAtStart+"=5")
	err := c.cmd.Run()
	if code := c.cmd.ProcessState.ExitCode(); code != 5 {
		t.Errorf("exit code = %d (%v), want 5", code, err)
	}
	if got := c.stderr.String(); got != "boom\n" {
		t.Errorf("stderr = %q, want boom", got)
	}
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n"

func TestGarbage(t *testing.T) {
	c := childCommand(t, demo.EnvGarbage+"=1")
	stdin, _ := c.cmd.StdinPipe()
	stdout, _ := c.cmd.StdoutPipe()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.cmd.Wait()
	defer stdin.Close()
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil || line != demo.GarbageLine+"\n" {
		t.Fatalf("first line = %q, %v", line, err)
	}
	// After the garbage it serves normally.
	stdin.Write([]byte(initializeLine))
	line, err = r.ReadString('\n')
	if err != nil || !strings.Contains(line, `"serverInfo"`) {
		t.Errorf("initialize answer = %q, %v", line, err)
	}
}

func TestHang(t *testing.T) {
	c := childCommand(t, demo.EnvHang+"=1")
	stdin, _ := c.cmd.StdinPipe()
	stdout, _ := c.cmd.StdoutPipe()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte(initializeLine))
	stdin.Close()
	got := make(chan string, 1)
	go func() {
		b, _ := bufio.NewReader(stdout).ReadString('\n')
		got <- b
	}()
	select {
	case line := <-got:
		t.Errorf("hanging server wrote %q", line)
	case <-time.After(200 * time.Millisecond):
	}
	// Still alive after EOF on stdin: only a signal stops it.
	c.cmd.Process.Kill()
	c.cmd.Wait()
	if c.cmd.ProcessState.Exited() {
		t.Errorf("hanging server exited by itself with %d", c.cmd.ProcessState.ExitCode())
	}
}

// TestCounter: each server process counts on from its own last number;
// another process starts from 1.
func TestCounter(t *testing.T) {
	a, b := connectMemory(t, nil, ""), connectMemory(t, nil, "")
	for want := 1; want <= 3; want++ {
		if got := callText(t, a, "counter", map[string]any{}); got != strconv.Itoa(want) {
			t.Errorf("call %d: %q", want, got)
		}
	}
	if got := callText(t, b, "counter", map[string]any{}); got != "1" {
		t.Errorf("another server's first count: %q", got)
	}
}
