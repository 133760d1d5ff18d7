package main

import (
	"context"
	"fmt"
	"strings"
)

// restartCmd is `mcpx restart <server>`: every instance of the server is
// drained and replaced.
func restartCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "restart")
	brokerAddr := brokerFlag(fs)
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(c, fs, "want one server name (see `mcpx status`)")
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	res, raw, err := bc.RestartServer(ctx, pos[0])
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", raw)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "restarted %s: %d replaced%s, %d stopped%s\n", res.Server,
		len(res.Replaced), idList(res.Replaced), len(res.Stopped), idList(res.Stopped))
	return exitOK
}

// refreshCmd is `mcpx refresh [<server>]`: the schema cache is dropped and
// the running children's tools listed again.
func refreshCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "refresh")
	brokerAddr := brokerFlag(fs)
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(c, fs, "want at most one server name")
	}
	server := ""
	if len(pos) == 1 {
		server = pos[0]
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	res, raw, err := bc.Refresh(ctx, server)
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", raw)
	} else {
		what := "every server"
		if server != "" {
			what = server
		}
		fmt.Fprintf(c.stdout, "refreshed %s: %d cache entr%s dropped, %d running instance%s listed again%s\n",
			what, res.Dropped, map[bool]string{true: "y", false: "ies"}[res.Dropped == 1], len(res.Listed), plural(len(res.Listed)), idList(res.Listed))
	}
	for id, why := range res.Failed {
		fmt.Fprintf(c.stderr, "mcpx: %s: listing its tools failed: %s\n", id, why)
	}
	if len(res.Failed) > 0 {
		return exitFailed
	}
	return exitOK
}

// idList is " (a, b)" for ids, "" for none.
func idList(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return " (" + strings.Join(ids, ", ") + ")"
}
