package main

import (
	"context"

	"mcpx.dev/mcpx/internal/demo"
)

// demoServer is `mcpx demo-server`: the built-in demo MCP server on
// stdin/stdout, the default config's only server. demo.Main also honours the
// demo's failure flags (see package demo), which tests use.
func demoServer(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "demo-server")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	return demo.Main(ctx)
}
