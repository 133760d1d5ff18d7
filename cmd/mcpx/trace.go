package main

import (
	"context"
	"flag"
	"fmt"

	"mcpx.dev/mcpx/observe/tracing"
)

// traceFlag is a calling command's --trace.
func traceFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("trace", false, "start an OpenTelemetry trace for the command and print its id on stderr; "+
		"its span is exported to the collector OTEL_EXPORTER_OTLP_ENDPOINT names, if set, and a broker with otel on records its own spans in the same trace")
}

// startTrace starts the command's trace (tracing.Root) and prints its id.
func startTrace(ctx context.Context, c *cli, name string) (context.Context, func()) {
	ctx, id, end := tracing.Root(ctx, name)
	fmt.Fprintf(c.stderr, "mcpx: trace %s\n", id)
	return ctx, end
}
