package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"mcpx.dev/mcpx/wire"
)

// toolsApprove is `mcpx tools approve <server>[.<tool>] [--hash H]`: the
// owner's approval of a server's tools as last listed (docs/trust.md,
// "Tool pins"), for the definition served at the cwd.
func toolsApprove(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "tools approve")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	hash := fs.String("hash", "", "approve only if the tool's hash as last listed is this one (from `mcpx tools pins`)")
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	co := callerFlags(fs, "approve the definition served in this directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(c, fs, "want one <server> or <server>.<tool>")
	}
	// A pool definition's name (name@hash) has no dot; a server's tool
	// follows its last dot.
	server, tool := pos[0], ""
	if i := strings.LastIndex(server, "."); i > 0 {
		server, tool = server[:i], server[i+1:]
	}
	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	doc, raw, err := bc.ApproveTools(ctx, caller, server, tool, *hash)
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
		return exitOK
	}
	if len(doc.Approved) == 0 {
		fmt.Fprintf(c.stdout, "%s: nothing to approve\n", doc.Server.Server)
	} else {
		fmt.Fprintf(c.stdout, "%s: approved %s\n", doc.Server.Server, strings.Join(doc.Approved, ", "))
	}
	return exitOK
}

// toolsPins is `mcpx tools pins [<server>] [--json]`: each pinned tool's
// state; with a server, the diffs of those not approved.
func toolsPins(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "tools pins")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(c, fs, "want at most one server name")
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	if err := autostart(ctx, c, bc, *noAutostart); err != nil {
		return report(c, err)
	}
	doc, raw, err := bc.ToolPins(ctx)
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
		return exitOK
	}
	var servers []wire.ServerPins
	for _, sp := range doc.Servers {
		// A project file's definitions are name@hash.
		if len(pos) == 0 || sp.Server == pos[0] || strings.HasPrefix(sp.Server, pos[0]+"@") {
			servers = append(servers, sp)
		}
	}
	if len(servers) == 0 {
		fmt.Fprintln(c.stdout, "no pinned tools")
		return exitOK
	}
	printPins(c, servers, len(pos) == 1)
	return exitOK
}

func printPins(c *cli, servers []wire.ServerPins, diffs bool) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tSTATE\tHASH\tFLAGS")
	for _, sp := range servers {
		for _, t := range sp.Tools {
			state := t.State
			if t.Withheld {
				state += " (withheld)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sp.Server, t.Name, state, t.Hash, orDash(strings.Join(t.Flags, ",")))
		}
	}
	tw.Flush()
	if !diffs {
		return
	}
	for _, sp := range servers {
		for _, t := range sp.Tools {
			if t.Diff != "" {
				fmt.Fprintf(c.stdout, "\n%s.%s (%s):\n%s\n", sp.Server, t.Name, t.State, t.Diff)
			}
		}
	}
}

// printPinsNote is `mcpx status`'s line per server with tools not
// approved; nothing when the caller may not list pins.
func printPinsNote(c *cli, doc *wire.ToolPins) {
	for _, sp := range doc.Servers {
		if sp.Unapproved == 0 {
			continue
		}
		var changed, flagged []string
		for _, t := range sp.Tools {
			if t.State != wire.PinApproved {
				changed = append(changed, t.Name+" "+t.State)
			}
			if len(t.Flags) > 0 {
				flagged = append(flagged, t.Name)
			}
		}
		line := fmt.Sprintf("tool pins: %s: %s", sp.Server, strings.Join(changed, ", "))
		if len(flagged) > 0 {
			line += "; flagged: " + strings.Join(flagged, ", ")
		}
		if sp.PinTools {
			line += " (withheld until approved)"
		}
		fmt.Fprintf(c.stdout, "%s — review with `mcpx tools pins %s`, approve with `mcpx tools approve %s`\n", line, sp.Server, sp.Server)
	}
}

// toolEventText is the tail of a tool event's line: the tool, what
// changed, the hashes, the flags, then the diff's lines (the owner's).
func toolEventText(ev wire.LifecycleEvent) string {
	s := " " + ev.Tool
	if ev.Change != "" {
		s += " " + ev.Change
	}
	if ev.OldHash != "" || ev.NewHash != "" {
		s += fmt.Sprintf(" %s -> %s", orDash(ev.OldHash), orDash(ev.NewHash))
	}
	if len(ev.Flags) > 0 {
		s += " flagged " + strings.Join(ev.Flags, ",")
	}
	if ev.Diff != "" {
		s += "\n    " + strings.ReplaceAll(ev.Diff, "\n", "\n    ")
	}
	return s
}
