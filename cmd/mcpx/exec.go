package main

import (
	"context"
	"io"
	"strings"
)

// execCmd is `mcpx exec ['<snippet>'|-] [args…] [-- args…]`: run a
// TypeScript or JavaScript snippet as `mcpx run` runs a script, in a
// module generated around it with the generated client in scope (each
// server as an object, log, callTool, ...), as the body of an async
// function of args: what it returns is printed as JSON. The snippet is
// read from stdin when it is "-", or absent and stdin is not a terminal.
func execCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "exec")
	sf := scriptFlagSet(fs)
	pos, after, code, ok := parseScriptFlags(c, fs, args)
	if !ok {
		return code
	}
	if *sf.export != "" {
		return usageError(c, fs, "--export names a script's export; a snippet is its module's only function")
	}
	var snippet string
	switch {
	case len(pos) > 0 && pos[0] != "-":
		snippet, pos = pos[0], pos[1:]
	case len(pos) == 0 && (c.stdin == nil || isTerminalReader(c.stdin)):
		return usageError(c, fs, "want a snippet, e.g. mcpx exec 'return (await demo.add({a:1,b:2})).structuredContent', or - to read it from stdin")
	default: // "-", or none with stdin not a terminal
		if len(pos) > 0 {
			pos = pos[1:]
		}
		if c.stdin == nil {
			return usageError(c, fs, "no stdin to read the snippet from")
		}
		b, err := io.ReadAll(c.stdin)
		if err != nil {
			return usageError(c, fs, "reading the snippet from stdin: %v", err)
		}
		snippet = string(b)
		c.stdin = strings.NewReader("") // read: the script's stdin is empty
	}
	if strings.TrimSpace(snippet) == "" {
		return usageError(c, fs, "the snippet is empty")
	}
	return sf.run(ctx, c, fs, scriptSource{snippet: snippet}, append(pos, after...))
}
