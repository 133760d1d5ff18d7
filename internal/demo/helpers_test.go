package demo_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/testenv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

func TestMain(m *testing.M) {
	demo.MaybeServe()
	os.Exit(m.Run())
}

// handshake is the last protocol revision with an initialize handshake; the
// go-sdk client defaults to the stateless 2026-07-28 revision.
const handshake = "2025-11-25"

// connectMemory connects a client to demo.NewServer over in-memory transports.
func connectMemory(t *testing.T, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := demo.NewServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return connect(t, ct, opts, version)
}

func connect(t *testing.T, tr mcp.Transport, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "0"}, opts)
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// child is the test binary re-exec'd as the demo server.
type child struct {
	cmd    *exec.Cmd
	stderr *testenv.SyncBuffer
}

func childCommand(t *testing.T, env ...string) *child {
	proctest.CheckNoLeaks(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{demo.EnvServer + "=1", proctest.Env(t)}, env...)...)
	c := &child{cmd: cmd, stderr: &testenv.SyncBuffer{}}
	cmd.Stderr = c.stderr
	return c
}

// startChild starts a demo server child and connects a client to it.
func startChild(t *testing.T, opts *mcp.ClientOptions, env ...string) (*mcp.ClientSession, *child) {
	t.Helper()
	c := childCommand(t, env...)
	cs := connect(t, &mcp.CommandTransport{Command: c.cmd, TerminateDuration: 2 * time.Second}, opts, handshake)
	return cs, c
}

// call calls a tool and returns its result, failing the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// textOf returns the text of a result with exactly one text content.
func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("got %d content items, want 1: %s", len(res.Content), mustJSON(res))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s: isError: %s", name, mustJSON(res))
	}
	return textOf(t, res)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// pipeServer runs demo.Run over pipes. The client's writes are teed into
// sent, so a test can compare what the client put on the wire.
type pipeServer struct {
	transport *mcp.IOTransport
	sent      *testenv.SyncBuffer
	done      chan error
}

func startRun(t *testing.T, ctx context.Context) *pipeServer {
	t.Helper()
	inR, inW := io.Pipe()   // client -> server
	outR, outW := io.Pipe() // server -> client
	p := &pipeServer{sent: &testenv.SyncBuffer{}, done: make(chan error, 1)}
	go func() {
		err := demo.Run(ctx, inR, outW)
		outW.Close()
		inR.Close()
		p.done <- err
	}()
	p.transport = &mcp.IOTransport{Reader: outR, Writer: teeWriteCloser{inW, p.sent}}
	return p
}

func (p *pipeServer) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("demo.Run did not return")
		return errors.New("unreachable")
	}
}

type teeWriteCloser struct {
	w   io.WriteCloser
	tee io.Writer
}

func (t teeWriteCloser) Write(p []byte) (int, error) {
	t.tee.Write(p)
	return t.w.Write(p)
}

func (t teeWriteCloser) Close() error { return t.w.Close() }
