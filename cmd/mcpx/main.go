// Command mcpx is the MCP broker daemon and its client: `mcpx serve` runs the
// daemon, `mcpx call server.tool '{...}'` calls a tool through it. Run
// `mcpx help` for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"mcpx.dev/mcpx/pool/proc"
	"mcpx.dev/mcpx/pool/proc/sandbox"
)

func main() {
	// A confined child's helper (pool/proc/sandbox) confines itself and execs the child.
	sandbox.MaybeExec()
	proc.MaybeWatch() // the daemon's watchdog (proc.Supervise): watch, then exit
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
