// Command load measures one MCP tool call, echo {"message":"hi"}, over every
// path mcpx cares about, in one run, as interleaved rounds, so that the
// ratios between paths are measured under the same machine noise:
//
//	go run ./bench/load                          # 5 rounds, 1.5s per cell, c=1 and 32
//	go run ./bench/load -rounds 3 -duration 3s -c 1,8,32 -json out.json
//	go run ./bench/load -mcpx /tmp/mcpx -profile /tmp/daemon.pprof
//
// Paths (see README.md): A0 stdio to `mcpx demo-server`; A0r stdio to a
// minimal hand-written echo child; H one streamable-HTTP hop to a go-sdk
// server in this process; Hraw a plain HTTP POST echo in this process, Hx
// the same in another process over a unix socket; U, Uwt, T and Ur
// through a `mcpx serve` daemon over its unix socket or loopback TCP. The MCP
// paths, c sessions with one call in flight each: F a bare go-sdk Streamable
// HTTP echo server in another process (the one-hop floor of an MCP
// endpoint), G mcp-hub (npm) fronting the demo server, M and M1 the daemon's
// /mcp and /mcp/demo, X any endpoint (-url, -header, -tool).
//
// Without -mcpx it builds mcpx.dev/mcpx/cmd/mcpx into a temporary directory,
// so run it from inside the module.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	switch {
	case os.Getenv(envRawChild) == "1":
		os.Exit(serveRawChild(os.Stdin, os.Stdout))
	case os.Getenv(envRawHTTP) != "":
		os.Exit(serveRawHTTP(os.Getenv(envRawHTTP)))
	case os.Getenv(envFloor) != "":
		os.Exit(serveFloor(os.Getenv(envFloor)))
	case os.Getenv(envProfDaemon) != "":
		os.Exit(serveProfiled(os.Getenv(envProfDaemon)))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
