package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hostile half of EnvProbe: what a server that means harm tries from
// inside a tool call, each answering what it reached, or the system's
// error as an isError result (docs/sandbox.md's acceptance):
//
//	list {path}          the names in a directory, one a line
//	connect {addr}       dials TCP host:port; "connected", and what the
//	                     peer wrote first (up to 256 bytes, 2s)
//	spawn {count}        starts count `sleep` processes at once, then
//	                     kills and reaps them; "started N"
//	alloc {mib}          allocates and touches that many MiB; "allocated N MiB"
//	signal {pid, signal} sends the signal (a number) to pid; "ok"
//	ptrace {pid}         attaches to pid (Linux: PTRACE_SEIZE, then
//	                     PTRACE_INTERRUPT, wait, PTRACE_DETACH: the
//	                     tracee's thread stops for a moment); "attached"

const listSchema = readSchema

const connectSchema = `{"type":"object","properties":{"addr":{"type":"string"}},"required":["addr"],"additionalProperties":false}`

const spawnSchema = `{"type":"object","properties":{"count":{"type":"integer","minimum":1,"maximum":4096}},"required":["count"],"additionalProperties":false}`

const allocSchema = `{"type":"object","properties":{"mib":{"type":"integer","minimum":1,"maximum":65536}},"required":["mib"],"additionalProperties":false}`

const signalSchema = `{"type":"object","properties":{"pid":{"type":"integer"},"signal":{"type":"integer","minimum":0,"maximum":64}},"required":["pid","signal"],"additionalProperties":false}`

const ptraceSchema = `{"type":"object","properties":{"pid":{"type":"integer"}},"required":["pid"],"additionalProperties":false}`

type hostileIn struct {
	Path   string `json:"path,omitempty"`
	Addr   string `json:"addr,omitempty"`
	Count  int    `json:"count,omitempty"`
	MiB    int    `json:"mib,omitempty"`
	Pid    int    `json:"pid,omitempty"`
	Signal int    `json:"signal,omitempty"`
}

// addHostile installs the hostile tools (EnvProbe).
func addHostile(s *mcp.Server) {
	mcp.AddTool(s, tool("list", "Lists a directory, or the system's error.", listSchema),
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			ents, err := os.ReadDir(in.Path)
			if err != nil {
				return errorText(err.Error()), nil, nil
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			return text(strings.Join(names, "\n")), nil, nil
		})
	mcp.AddTool(s, tool("connect", "Dials a TCP address; what the peer wrote first, or the system's error.", connectSchema),
		func(ctx context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			return connect(ctx, in.Addr), nil, nil
		})
	mcp.AddTool(s, tool("spawn", "Starts that many processes at once, then ends them; how many started, or the system's error.", spawnSchema),
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			return spawn(in.Count), nil, nil
		})
	mcp.AddTool(s, tool("alloc", "Allocates and touches that many MiB.", allocSchema),
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			b := make([]byte, in.MiB<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			n := len(b) >> 20
			b = nil
			debug.FreeOSMemory()
			return text(fmt.Sprintf("allocated %d MiB", n)), nil, nil
		})
	mcp.AddTool(s, tool("signal", "Sends a signal to a process; \"ok\", or the system's error.", signalSchema),
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			if err := syscall.Kill(in.Pid, syscall.Signal(in.Signal)); err != nil {
				return errorText(fmt.Sprintf("kill %d: %v", in.Pid, err)), nil, nil
			}
			return text("ok"), nil, nil
		})
	mcp.AddTool(s, tool("ptrace", "Attaches to a process and detaches again; \"attached\", or the system's error.", ptraceSchema),
		func(_ context.Context, _ *mcp.CallToolRequest, in hostileIn) (*mcp.CallToolResult, any, error) {
			if err := ptraceAttach(in.Pid); err != nil {
				return errorText(fmt.Sprintf("ptrace %d: %v", in.Pid, err)), nil, nil
			}
			return text("attached"), nil, nil
		})
}

// connect dials addr and reads what the peer says first.
func connect(ctx context.Context, addr string) *mcp.CallToolResult {
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return errorText(err.Error())
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second)) //nolint:errcheck // a fresh conn
	b, _ := io.ReadAll(io.LimitReader(c, 256))
	return text("connected\n" + string(b))
}

// spawn starts count sleeps, stopping at the first that cannot start,
// then kills and reaps every one it started.
func spawn(count int) *mcp.CallToolResult {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return errorText(err.Error())
	}
	var started []*exec.Cmd
	defer func() {
		for _, c := range started {
			c.Process.Kill()
			c.Wait() //nolint:errcheck // killed
		}
	}()
	for range count {
		c := exec.Command(sleep, "300")
		if err := c.Start(); err != nil {
			return errorText(fmt.Sprintf("started %d of %d: %v", len(started), count, err))
		}
		started = append(started, c)
	}
	return text(fmt.Sprintf("started %d", len(started)))
}
