package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// tools is `mcpx tools [server] [--json]`: a table of server, tool and the
// first line of the description. Servers that fail are reported on stderr
// after the table, and make the exit code 4.
func tools(ctx context.Context, c *cli, args []string) int {
	if len(args) > 0 { // a server named approve or pins: `mcpx tools -- approve`
		switch args[0] {
		case "approve":
			return toolsApprove(ctx, c, args[1:])
		case "pins":
			return toolsPins(ctx, c, args[1:])
		}
	}
	fs := newFlags(c, "tools")
	brokerAddr := brokerFlag(fs)
	standaloneFlag(fs, brokerAddr)
	noAutostart := autostartFlag(fs)
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	co := callerFlags(fs, "list as a caller in this directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(c, fs, "want at most one server name")
	}
	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	list, raw, err := listTools(ctx, bc, caller, pos)
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
	} else {
		printTools(c, list.Tools)
	}
	for _, p := range list.Errors {
		fmt.Fprintf(c.stderr, "mcpx: %s\n", problemText(p))
	}
	if len(list.Errors) > 0 {
		return exitFailed
	}
	return exitOK
}

type toolRow struct {
	Server      string `json:"server"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// listTools lists every server's tools, or with a server name that
// server's, tagged the same way.
func listTools(ctx context.Context, bc *client.Client, caller client.Caller, pos []string) (*wire.ToolList, []byte, error) {
	if len(pos) == 0 {
		return bc.Tools(ctx, caller)
	}
	one, raw, err := bc.ServerTools(ctx, caller, pos[0])
	if err != nil {
		return nil, nil, err
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(one.Tools, &tools); err != nil {
		return nil, raw, fmt.Errorf("decoding the broker's answer: %w", err)
	}
	list := &wire.ToolList{}
	for _, t := range tools {
		list.Tools = append(list.Tools, wire.TagServer(one.Server, t))
	}
	return list, raw, nil
}

func printTools(c *cli, tools []json.RawMessage) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tDESCRIPTION")
	for _, t := range tools {
		var r toolRow
		if json.Unmarshal(t, &r) != nil {
			continue
		}
		desc, _, _ := strings.Cut(strings.TrimSpace(r.Description), "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Server, r.Name, desc)
	}
	tw.Flush()
}
