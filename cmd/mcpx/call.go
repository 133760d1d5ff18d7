package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// call is `mcpx call <server>.<tool> [json|-]`.
func call(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "call")
	brokerAddr := brokerFlag(fs)
	standaloneFlag(fs, brokerAddr)
	chain := addChainPathFlags(fs)
	brokerAddr.chain = &chain
	noAutostart := autostartFlag(fs)
	asJSON := fs.Bool("json", false, "print the raw CallToolResult JSON")
	progress := fs.Bool("progress", false, "print progress to stderr (default: when stderr is a terminal)")
	asTask := fs.Bool("task", false, "run the call as a task: print its id at once (mcpx tasks result <id> waits for the result)")
	logLevel := fs.String("log-level", "", "ask the server's instance for its log messages at this level and above ("+strings.Join(wire.MCPLogLevels(), ", ")+
		") and print them to stderr during the call (without it: printed when stderr is a terminal); an instance has one level, so callers sharing it share the last one set")
	co := callerFlags(fs, "the directory the call is made from")
	traced := traceFlag(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if *asTask && *logLevel != "" {
		return usageError(c, fs, "--log-level prints the messages of a call that mcpx call waits for; --task does not wait: leave one out")
	}
	if *logLevel != "" && !slices.Contains(wire.MCPLogLevels(), *logLevel) {
		return usageError(c, fs, "--log-level %q is not one of %s", *logLevel, strings.Join(wire.MCPLogLevels(), ", "))
	}
	if (*chain.override != "" || *chain.fallback != "") && !brokerAddr.standalone {
		return usageError(c, fs, "--override-paths and --fallback-paths shape the config chain of a pool this command runs: add --standalone (a running daemon's chain is its own: mcpx serve --override-paths …)")
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError(c, fs, "want <server>.<tool> and optional JSON arguments")
	}
	server, tool, ok := strings.Cut(pos[0], ".")
	if !ok || server == "" || tool == "" {
		return usageError(c, fs, "%q is not <server>.<tool>, e.g. demo.echo", pos[0])
	}
	body, err := callArguments(c, pos[1:])
	if err != nil {
		return usageError(c, fs, "%v", err)
	}
	if *traced {
		var end func()
		ctx, end = startTrace(ctx, c, "mcpx call "+pos[0])
		defer end()
	}

	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	if *asTask {
		return startTask(ctx, c, bc, caller, server, tool, body, *asJSON)
	}
	var onProgress func(json.RawMessage)
	if *progress || isTerminal(c.stderr) {
		onProgress = func(p json.RawMessage) { printProgress(c, p) }
	}
	o := client.CallOptions{OnProgress: onProgress, OnInput: callInput(c, pos),
		OnElicitationComplete: func(e wire.ElicitationComplete) {
			fmt.Fprintf(c.stderr, "server %s says the interaction at the URL it asked you to open is complete (%s)\n", e.Server, e.ElicitationID)
		}}
	if *logLevel != "" {
		var p *wire.Problem
		switch err := bc.SetLogLevel(ctx, caller, server, *logLevel); {
		case errors.As(err, &p):
			// A server without logging (a stateless-era child has none)
			// still answers the call: say so, and call.
			fmt.Fprintf(c.stderr, "mcpx: server %s took no log level (%s); calling without\n", server, p.Detail)
		case err != nil:
			return report(c, err)
		}
	}
	if *logLevel != "" || isTerminal(c.stderr) {
		o.OnMessage = func(m wire.LogMessage) { printLogMessage(c, m, *logLevel) }
	}
	result, err := bc.Call(ctx, caller, server, tool, body, o)
	if err != nil {
		return report(c, err)
	}
	warnSessionless(ctx, c, bc, caller, server)
	return printResult(c, result, *asJSON)
}

// callArguments returns the request body: the JSON argument, stdin for "-",
// nothing (= {}) when absent. Malformed JSON is a usage error here rather
// than a round trip.
func callArguments(c *cli, pos []string) ([]byte, error) {
	if len(pos) == 0 {
		return []byte{}, nil
	}
	b := []byte(pos[0])
	if pos[0] == "-" {
		var err error
		if b, err = io.ReadAll(c.stdin); err != nil {
			return nil, fmt.Errorf("reading arguments from stdin: %w", err)
		}
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return []byte{}, nil
	}
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("arguments are not valid JSON: %v at byte offset %d", se, se.Offset)
		}
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if b[0] != '{' {
		return nil, errors.New(`arguments must be a JSON object, e.g. '{"message": "hi"}'`)
	}
	return b, nil
}

// printProgress writes one notifications/progress params object as
// "progress 3/10: message".
func printProgress(c *cli, params json.RawMessage) {
	var p wire.Progress
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s := fmt.Sprintf("progress %g", p.Progress)
	if p.Total != nil {
		s += fmt.Sprintf("/%g", *p.Total)
	}
	if p.Message != "" {
		s += ": " + p.Message
	}
	fmt.Fprintln(c.stderr, s)
}

// toolResult is the part of an MCP CallToolResult the CLI prints.
type toolResult struct {
	Content           []contentItem   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

type contentItem struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	MimeType string `json:"mimeType"`
	Data     string `json:"data"` // base64: image, audio
	URI      string `json:"uri"`  // resource_link
	Name     string `json:"name"`
	Resource *struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
		Blob     string `json:"blob"`
	} `json:"resource"`
}

// printResult prints a CallToolResult: raw with --json, else its text
// content, one item per line, and a description of other items. A result
// with isError goes to stderr and exits 1.
func printResult(c *cli, raw []byte, asJSON bool) int {
	var res toolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return report(c, fmt.Errorf("the broker's answer is not a CallToolResult: %w", err))
	}
	out, code := c.stdout, exitOK
	if res.IsError {
		out, code = c.stderr, exitToolError
	}
	if asJSON {
		fmt.Fprintf(c.stdout, "%s\n", bytes.TrimRight(raw, "\n"))
		return code
	}
	for _, item := range res.Content {
		fmt.Fprintln(out, describe(item))
	}
	if len(res.Content) == 0 && len(res.StructuredContent) > 0 {
		fmt.Fprintf(out, "%s\n", res.StructuredContent)
	}
	return code
}

// describe renders one content item: text as itself, anything else as a
// bracketed description such as "[image image/png, 1234 bytes]".
func describe(item contentItem) string {
	switch item.Type {
	case "text":
		return strings.TrimSuffix(item.Text, "\n")
	case "image", "audio":
		return fmt.Sprintf("[%s %s, %d bytes]", item.Type, item.MimeType, decodedLen(item.Data))
	case "resource_link":
		s := "[resource link " + item.URI
		if item.Name != "" {
			s += " (" + item.Name + ")"
		}
		return s + "]"
	case "resource":
		if r := item.Resource; r != nil && r.Blob == "" && r.Text != "" {
			return strings.TrimSuffix(r.Text, "\n") // an embedded text resource reads as its text
		}
		if r := item.Resource; r != nil {
			n := len(r.Text)
			if r.Blob != "" {
				n = decodedLen(r.Blob)
			}
			return fmt.Sprintf("[resource %s %s, %d bytes]", r.URI, r.MimeType, n)
		}
	}
	return fmt.Sprintf("[%s content]", item.Type)
}

func decodedLen(b64 string) int {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return base64.StdEncoding.DecodedLen(len(b64))
	}
	return len(b)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTTY(f.Fd())
}

func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTTY(f.Fd())
}

// callInput is the call's answer to a child's requests for input: the
// terminal's form when stdin is a terminal (and not the arguments), else a
// decline that says on stderr why mcpx declined.
func callInput(c *cli, pos []string) func(context.Context, wire.InputRequest) (wire.InputAnswer, error) {
	why := ""
	switch {
	case len(pos) > 1 && pos[1] == "-":
		why = "mcpx call read the arguments from stdin, so it cannot ask there"
	case !isTerminalReader(c.stdin):
		why = "mcpx call is not interactive: stdin is not a terminal"
	default:
		return newTerminalForm(c.stdin, c.stderr).answer
	}
	return func(_ context.Context, in wire.InputRequest) (wire.InputAnswer, error) {
		what := in.Kind
		if in.Message != "" {
			what += fmt.Sprintf(" %q", in.Message)
		}
		fmt.Fprintf(c.stderr, "mcpx: declined the server's request for %s: %s\n", what, why)
		return wire.InputAnswer{Action: wire.ActionDecline}, nil
	}
}

// printLogMessage writes a child's log message to stderr as
// "server [level] logger: data", if it is at min or above ("" = any).
func printLogMessage(c *cli, m wire.LogMessage, min string) {
	levels := wire.MCPLogLevels()
	if min != "" && slices.Index(levels, m.Level) < slices.Index(levels, min) {
		return
	}
	text := string(m.Data)
	var s string
	if json.Unmarshal(m.Data, &s) == nil {
		text = s
	}
	who := m.Server
	if m.Logger != "" {
		who += " " + m.Logger
	}
	fmt.Fprintf(c.stderr, "%s [%s]: %s\n", who, m.Level, strings.TrimSuffix(text, "\n"))
}
