package main

import (
	"context"
	"fmt"

	"mcpx.dev/mcpx/openapi"
)

// openapiCmd prints the broker's OpenAPI 3.1 document, the one the daemon
// serves at /openapi.json (generated here from the same route table, so no
// daemon is needed).
func openapiCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "openapi")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	doc, err := openapi.Broker(openapi.Options{Version: version()})
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitToolError
	}
	c.stdout.Write(doc) //nolint:errcheck // nothing to do if stdout is gone
	return exitOK
}
