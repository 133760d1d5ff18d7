package main

import (
	"context"
	"strings"
)

// typesCmd is `mcpx types <server>[.<tool>] [--no-instructions]`: the
// TypeScript declarations of a server's tools, or of one, as the daemon
// serves them at /v1/types: the config's prelude as comments, then the
// server's namespace, its instructions as the namespace's doc comment.
func typesCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "types")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	noInstructions := fs.Bool("no-instructions", false, "leave out the server's instructions")
	co := callerFlags(fs, "list tools as a caller in this directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 || pos[0] == "" {
		return usageError(c, fs, "want one <server> or <server>.<tool>")
	}
	// A server name has no dot (config names are letters, digits, _ and
	// -), so the first dot ends it; a tool name may have dots of its own.
	server, tool, _ := strings.Cut(pos[0], ".")
	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	src, err := bc.Types(ctx, caller, server, tool, *noInstructions)
	if err != nil {
		return report(c, err)
	}
	c.stdout.Write(src) //nolint:errcheck // nothing to do if stdout is gone
	return exitOK
}
