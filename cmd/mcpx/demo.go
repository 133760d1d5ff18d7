package main

import (
	"context"

	"mcpx.dev/mcpx/internal/demo"
)

// demoServer is `mcpx demo-server`: the built-in demo MCP server on
// stdin/stdout, the default config's only server. With --failure-flags it
// also honours the demo's MCPX_DEMO_* failure switches (see package demo),
// for tests; without, they are ignored.
func demoServer(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "demo-server")
	failures := fs.Bool("failure-flags", false, "honour the MCPX_DEMO_* failure switches (for tests)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	return demo.Main(ctx, c.stdin, c.stdout, c.stderr, *failures)
}
