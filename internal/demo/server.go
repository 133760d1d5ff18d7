package demo

import (
	"io"
	"os"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the demo server's serverInfo.version.
const Version = "1.0.0"

// NewServer returns the demo server, ready for any mcp.Transport. The `init`
// tool of a server made by NewServer reports the initialize parameters as the
// SDK parsed them (there is no raw line to record); use Run for the raw line.
// Tool output meant for stderr goes to os.Stderr.
func NewServer() *mcp.Server {
	return newServer(os.Stderr, nil, false, false)
}

// demo holds what the handlers share. rec is nil when the raw initialize line
// is not available.
type demo struct {
	stderr io.Writer
	rec    *initRecorder
	count  atomic.Int64 // the counter tool's last number
}

func newServer(stderr io.Writer, rec *initRecorder, drift, apps bool) *mcp.Server {
	d := &demo{stderr: stderr, rec: rec}
	opts := &mcp.ServerOptions{Instructions: "A demo server for testing mcpx: echo, add, sleep, progress, roots and failure tools."}
	if apps {
		subscribable(opts)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpx-demo", Title: "mcpx demo server", Version: Version}, opts)
	d.addTools(s)
	if drift {
		s.RemoveTools("add")
		mcp.AddTool(s, tool("echo", "Returns the message.", DriftEchoSchema), echo)
	}
	s.AddPrompt(greetPrompt, greet)
	s.AddResource(readmeResource, readReadme)
	return s
}

func (d *demo) addTools(s *mcp.Server) {
	mcp.AddTool(s, tool("echo", "Returns the message.", echoSchema), echo)
	mcp.AddTool(s, tool("add", "Adds two numbers; the result is also structured content {sum}.", addSchema), add)
	mcp.AddTool(s, tool("sleep", "Sleeps for ms milliseconds; returns early when the call is cancelled.", sleepSchema), d.sleep)
	mcp.AddTool(s, tool("progress", "Reports progress once per step (when the call has a progressToken), then returns \"done N\".", progressSchema), progress)
	mcp.AddTool(s, tool("cwd", "Returns the server process's working directory.", emptySchema), cwd)
	mcp.AddTool(s, tool("roots", "Asks the client for its roots and returns them as JSON; [] when the client has no roots capability.", emptySchema), roots)
	mcp.AddTool(s, tool("env", "Returns the value of an environment variable of the server process.", envSchema), env)
	mcp.AddTool(s, tool("pid", "Returns the server process id.", emptySchema), pid)
	mcp.AddTool(s, tool("crash", "Writes stderr text, then exits the server process without answering.", crashSchema), d.crash)
	mcp.AddTool(s, tool("big", "Returns a text of exactly the given number of bytes.", bigSchema), big)
	mcp.AddTool(s, tool("init", "Returns the exact initialize request line the client sent, with its parsed capabilities.", emptySchema), d.init)
	mcp.AddTool(s, tool("fail", "Returns a tool result with isError: true and the message.", failSchema), fail)
	mcp.AddTool(s, tool("strict", "Answers JSON-RPC -32602 (Invalid params) unless n is a positive integer.", strictSchema), strict)
	mcp.AddTool(s, tool("stderr", "Writes text to the server's stderr and returns \"ok\".", stderrSchema), d.writeStderr)
	mcp.AddTool(s, tool("counter", "Returns the next number of a counter kept in the server process's memory: 1, 2, 3, …", emptySchema), d.counter)
	mcp.AddTool(s, tool("ask", "Asks the user a form (MCP elicitation) and returns \"accept\" with the answer as JSON, \"decline\" or \"cancel\".", askSchema), ask)
}

func tool(name, description, schema string) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: description, InputSchema: rawSchema(schema)}
}
