package main

import (
	"context"
	"fmt"
	"strings"

	"mcpx.dev/mcpx/wire"
)

// catalogCmd is `mcpx catalog [--budget N] [--bias Q] [--json]`: every
// server with its tool count, then the one-line signatures the budget (in
// tokens of four characters) lets in, round-robin across servers (GET
// /v1/catalog). Failing servers are reported on stderr and make the exit
// code 4.
func catalogCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "catalog")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	budget := fs.Int("budget", wire.DefaultCatalogBudget, "tokens (4 characters each) to spend on signatures")
	bias := fs.String("bias", "", "rank each server's tools by how well they match these search terms")
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	co := callerFlags(fs, "list as a caller in this directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "want no arguments")
	}
	if *budget < 0 {
		return usageError(c, fs, "--budget must be 0 or more")
	}
	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	cat, raw, err := bc.Catalog(ctx, caller, *budget, strings.Fields(*bias))
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
	} else {
		for _, s := range cat.Servers {
			fmt.Fprintf(c.stdout, "%s: %d tools", s.Server, s.Tools)
			if s.Shown < s.Tools {
				fmt.Fprintf(c.stdout, ", %d shown", s.Shown)
			}
			fmt.Fprintln(c.stdout)
		}
		if len(cat.Signatures) > 0 {
			fmt.Fprintln(c.stdout)
		}
		for _, s := range cat.Signatures {
			fmt.Fprintln(c.stdout, s.Signature)
		}
	}
	for _, p := range cat.Errors {
		fmt.Fprintf(c.stderr, "mcpx: %s\n", problemText(p))
	}
	if len(cat.Errors) > 0 {
		return exitFailed
	}
	return exitOK
}
