package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/mcp/jsonrpc"
)

func TestMain(m *testing.M) {
	demo.MaybeServe() // in the re-exec'd child: serve the demo server on stdio, exit
	if os.Getenv(envRawChild) == "1" {
		os.Exit(serveRaw(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// envRawChild=1 makes the re-exec'd test binary serve serveRaw instead.
const envRawChild = "MCPX_TEST_RAW_CHILD"

// serveRaw is a minimal MCP server that costs next to nothing per call, so
// that benchmarks against it measure the client: it answers initialize,
// ping and every tools/call with a fixed result, and ignores notifications.
func serveRaw(in io.Reader, out io.Writer) int {
	br := bufio.NewReaderSize(in, 64<<10)
	bw := bufio.NewWriterSize(out, 64<<10)
	for {
		line, err := readLine(br)
		if err != nil {
			return 0
		}
		e, err := jsonrpc.Parse(line)
		if err != nil || e.ID == nil {
			continue
		}
		bw.WriteString(`{"jsonrpc":"2.0","id":`)
		bw.Write(e.ID)
		switch e.Method {
		case "initialize":
			bw.WriteString(`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}}` + "\n")
		case "tools/call":
			bw.WriteString(`,"result":{"content":[{"type":"text","text":"hello"}]}}` + "\n")
		default:
			bw.WriteString(`,"result":{}}` + "\n")
		}
		if br.Buffered() == 0 {
			bw.Flush()
		}
	}
}

// child is a re-exec'd test binary serving the demo server on stdio.
type child struct {
	cmd    *exec.Cmd
	stderr syncBuffer
	exited chan struct{} // closed when cmd.Wait returns
	err    error         // cmd.Wait's error, valid once exited is closed
}

// startChild starts the demo server as a child process. The test fails
// unless the child is gone by the end of the test.
func startChild(t testing.TB, env ...string) (*child, Transport) {
	t.Helper()
	// GORACE: a -race child would otherwise sleep 1s at exit.
	base := []string{"GORACE=atexit_sleep_ms=0"}
	if !slices.Contains(env, envRawChild+"=1") {
		base = append(base, demo.EnvServer+"=1")
	}
	return startProc(t, "", append(base, env...), os.Args[0])
}

// connectChild starts a child and connects to it.
func connectChild(t testing.TB, opts Options, env ...string) (*child, *Session) {
	t.Helper()
	c, tr := startChild(t, env...)
	s, err := Connect(context.Background(), tr, opts)
	if err != nil {
		t.Fatalf("Connect: %v (child stderr: %s)", err, c.stderr.String())
	}
	t.Cleanup(func() { s.Close() })
	return c, s
}

// toolText returns the first text content of a CallToolResult.
func toolText(t testing.TB, res json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("bad CallToolResult %s: %v", truncate(res, 300), err)
	}
	return r.Content[0].Text
}

func TestChildEcho(t *testing.T) {
	_, s := connectChild(t, Options{})
	// The demo server speaks both eras: the probe finds the newer.
	if v, e := s.ProtocolVersion(), s.Era(); v != jsonrpc.StatelessVersion || e != EraStateless {
		t.Errorf("ProtocolVersion, Era = %q, %q; want %q, %q", v, e, jsonrpc.StatelessVersion, EraStateless)
	}
	res, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"hello"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolText(t, res); got != "hello" {
		t.Errorf("echo = %q", got)
	}
}

func TestChildInitializeLine(t *testing.T) {
	_, s := connectChild(t, Options{Era: EraHandshake})
	res, err := s.CallTool(t.Context(), "init", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ Raw string }
	if err := json.Unmarshal([]byte(toolText(t, res)), &info); err != nil {
		t.Fatal(err)
	}
	const want = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"mcpx","version":"dev"}}}`
	if info.Raw != want {
		t.Errorf("the child received\n%s\nwant\n%s", info.Raw, want)
	}
}

func TestChildRoots(t *testing.T) {
	for _, tt := range []struct{ root, want string }{
		{"", `[]`},
		{"/work/my project", `[{"uri":"file:///work/my%20project","name":"my project"}]`},
	} {
		t.Run(tt.want, func(t *testing.T) {
			_, s := connectChild(t, Options{Root: tt.root})
			res, err := s.CallTool(t.Context(), "roots", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			json.Unmarshal([]byte(toolText(t, res)), &got)
			json.Unmarshal([]byte(tt.want), &want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("roots mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestChildListsAndPrompts(t *testing.T) {
	_, s := connectChild(t, Options{})
	tools, err := s.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ts []struct{ Name string }
	if err := json.Unmarshal(tools, &ts); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range ts {
		names[tool.Name] = true
	}
	for _, want := range []string{"echo", "progress", "sleep", "roots", "big"} {
		if !names[want] {
			t.Errorf("Tools lacks %q: %s", want, truncate(tools, 300))
		}
	}
	if prompts, err := s.Prompts(t.Context()); err != nil || !bytes.Contains(prompts, []byte(`"greet"`)) {
		t.Errorf("Prompts = %s, %v", prompts, err)
	}
	if res, err := s.GetPrompt(t.Context(), "greet", map[string]string{"name": "Ada"}); err != nil || !bytes.Contains(res, []byte("Ada")) {
		t.Errorf("GetPrompt = %s, %v", res, err)
	}
	if rs, err := s.Resources(t.Context()); err != nil || !bytes.Contains(rs, []byte(demo.ReadmeURI)) {
		t.Errorf("Resources = %s, %v", rs, err)
	}
	if res, err := s.ReadResource(t.Context(), demo.ReadmeURI); err != nil || !bytes.Contains(res, []byte(`"contents"`)) {
		t.Errorf("ReadResource = %s, %v", res, err)
	}
	if _, err := s.ResourceTemplates(t.Context()); err != nil {
		t.Errorf("ResourceTemplates: %v", err)
	}
	_, err = s.CallTool(t.Context(), "no-such-tool", nil, nil)
	var rerr *jsonrpc.Error
	if !errors.As(err, &rerr) {
		t.Errorf("unknown tool error = %v, want *jsonrpc.Error", err)
	}
}

func TestChildProgress(t *testing.T) {
	_, s := connectChild(t, Options{})
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			steps := i + 1
			var got []string
			res, err := s.CallTool(t.Context(), "progress", json.RawMessage(fmt.Sprintf(`{"steps":%d}`, steps)), func(p json.RawMessage) {
				var pr struct{ Message string }
				json.Unmarshal(p, &pr)
				got = append(got, pr.Message)
			})
			if err != nil {
				t.Error(err)
				return
			}
			if text := toolText(t, res); text != fmt.Sprintf("done %d", steps) {
				t.Errorf("progress = %q", text)
			}
			var want []string
			for k := 1; k <= steps; k++ {
				want = append(want, fmt.Sprintf("step %d of %d", k, steps))
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("progress %d (-want +got):\n%s", steps, d)
			}
		})
	}
	wg.Wait()
}

func TestChildCancelSleep(t *testing.T) {
	c, s := connectChild(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	ch := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, "sleep", json.RawMessage(`{"ms":600000}`), nil)
		ch <- err
	}()
	// Wait until the child is sleeping, then cancel.
	for !strings.Contains(c.stderr.String(), "sleeping") {
		if err := s.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-ch; !errors.Is(err, context.Canceled) {
		t.Errorf("sleep error = %v, want context.Canceled", err)
	}
	// The child saw notifications/cancelled and stopped sleeping.
	for !strings.Contains(c.stderr.String(), "cancelled sleep") {
		if err := s.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChildBig(t *testing.T) {
	_, s := connectChild(t, Options{})
	const size = 8 << 20
	res, err := s.CallTool(t.Context(), "big", json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, size)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(toolText(t, res)); got != size {
		t.Errorf("big text is %d bytes, want %d", got, size)
	}
}

func TestChildConcurrentEcho(t *testing.T) {
	_, s := connectChild(t, Options{})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			msg := fmt.Sprintf("m%d", i)
			res, err := s.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"`+msg+`"}`), nil)
			if err != nil {
				t.Error(err)
				return
			}
			if got := toolText(t, res); got != msg {
				t.Errorf("echo %s = %q", msg, got)
			}
		})
	}
	wg.Wait()
}

func TestChildCrash(t *testing.T) {
	c, s := connectChild(t, Options{})
	_, err := s.CallTool(t.Context(), "crash", json.RawMessage(`{"code":3,"stderr":"dying"}`), nil)
	if !errors.Is(err, ErrClosed) {
		t.Errorf("crash error = %v, want ErrClosed", err)
	}
	<-s.Done()
	<-c.exited
	if !errors.Is(s.Err(), ErrClosed) {
		t.Errorf("Err = %v", s.Err())
	}
}

func TestChildGarbage(t *testing.T) {
	c, tr := startChild(t, demo.EnvGarbage+"=1")
	_, err := Connect(context.Background(), tr, Options{})
	var perr *ProtocolError
	if !errors.As(err, &perr) || !errors.Is(err, ErrClosed) {
		t.Fatalf("Connect error = %v, want ErrClosed and *ProtocolError", err)
	}
	if !strings.Contains(err.Error(), demo.GarbageLine) || !strings.Contains(err.Error(), "logs belong on stderr") {
		t.Errorf("Connect error %q should quote the line and give the hint", err)
	}
	<-c.exited
}

func TestChildExitAtStart(t *testing.T) {
	c, tr := startChild(t, demo.EnvExitAtStart+"=7")
	// No deadline: Connect must return when the child's stdout closes.
	_, err := Connect(context.Background(), tr, Options{})
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Connect error = %v, want ErrClosed", err)
	}
	<-c.exited
}

func TestChildHangCloseUnblocks(t *testing.T) {
	c, tr := startChild(t, demo.EnvHang+"=1")
	ctx, cancel := context.WithCancel(t.Context())
	ch := make(chan error, 1)
	go func() {
		_, err := Connect(ctx, tr, Options{})
		ch <- err
	}()
	cancel()
	if err := <-ch; !errors.Is(err, context.Canceled) {
		t.Errorf("Connect error = %v, want context.Canceled", err)
	}
	// The hang flag keeps the process alive after stdin EOF: stop it.
	c.cmd.Process.Kill()
	<-c.exited
}

// BenchmarkCallToolStdio measures one caller's tools/call round trip to a
// real child (the demo server's echo) over stdio.
func BenchmarkCallToolStdio(b *testing.B) {
	c, s := connectChild(b, Options{})
	args := json.RawMessage(`{"message":"hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU(c.cmd.Process.Pid)
	defer cpu.report(b)
	for b.Loop() {
		if _, err := s.CallTool(ctx, "echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallToolStdioParallel multiplexes GOMAXPROCS*p callers on one
// child (-cpu and SetParallelism control the concurrency).
func BenchmarkCallToolStdioParallel(b *testing.B) {
	c, s := connectChild(b, Options{})
	args := json.RawMessage(`{"message":"hello"}`)
	ctx := context.Background()
	var maxInFlight atomic.Int64
	b.ReportAllocs()
	cpu := startCPU(c.cmd.Process.Pid)
	defer cpu.report(b)
	b.SetParallelism(16) // c=32 on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.CallTool(ctx, "echo", args, nil); err != nil {
				b.Error(err)
				return
			}
			if n := int64(s.InFlight()); n > maxInFlight.Load() {
				maxInFlight.Store(n)
			}
		}
	})
	b.ReportMetric(float64(maxInFlight.Load()), "max-inflight")
}

// BenchmarkCallToolRawChild is BenchmarkCallToolStdio against serveRaw: the
// client's own cost over real pipes.
func BenchmarkCallToolRawChild(b *testing.B) {
	c, s := connectChild(b, Options{}, envRawChild+"=1")
	args := json.RawMessage(`{"message":"hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU(c.cmd.Process.Pid)
	defer cpu.report(b)
	for b.Loop() {
		if _, err := s.CallTool(ctx, "echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallToolRawChildParallel is BenchmarkCallToolStdioParallel
// against serveRaw.
func BenchmarkCallToolRawChildParallel(b *testing.B) {
	c, s := connectChild(b, Options{}, envRawChild+"=1")
	args := json.RawMessage(`{"message":"hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU(c.cmd.Process.Pid)
	defer cpu.report(b)
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.CallTool(ctx, "echo", args, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// readLine returns the next line of br without its newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadBytes('\n')
	if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
		return nil, err
	}
	return bytes.TrimSuffix(line, []byte("\n")), nil
}
