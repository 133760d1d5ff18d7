package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// clientgenCmd is `mcpx clientgen ts [--servers a,b] [-o file]`: the
// generated TypeScript client of the broker's servers, as the daemon serves
// it at /v1/clients/typescript, from the tool lists of the children in this
// caller's scope. "-" or no -o writes it to stdout.
func clientgenCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "clientgen")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	servers := fs.String("servers", "", "comma-separated servers to include (default: every server)")
	out := fs.String("o", "-", "write the module to this file (- = stdout)")
	asJSON := fs.Bool("json", false, "with -o: print what was written as JSON (file, bytes, servers); to stdout the module is the output")
	co := callerFlags(fs, "list tools as a caller in this directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 || pos[0] != "ts" {
		return usageError(c, fs, "want the language: ts")
	}
	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	var names []string
	if *servers != "" {
		names = strings.Split(*servers, ",")
	}
	src, err := bc.TypeScriptClient(ctx, caller, names)
	if err != nil {
		return report(c, err)
	}
	if *out == "-" {
		c.stdout.Write(src) //nolint:errcheck // nothing to do if stdout is gone
		return exitOK
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitToolError
	}
	if *asJSON {
		if names == nil {
			names = []string{}
		}
		b, _ := json.Marshal(map[string]any{"file": *out, "bytes": len(src), "servers": names})
		fmt.Fprintf(c.stdout, "%s\n", b)
	}
	return exitOK
}
