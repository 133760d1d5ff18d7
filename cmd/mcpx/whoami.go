package main

import (
	"context"
	"fmt"
	"strings"

	"mcpx.dev/mcpx/wire"
)

// whoamiCmd is `mcpx whoami [--json]`: how the broker sees this caller —
// its name, how it came in, and its rights — so a refused caller can see
// why.
func whoamiCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "whoami")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	co := callerFlags(fs, "ask as a caller in this directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "takes no arguments")
	}
	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	w, raw, err := bc.Whoami(ctx, caller)
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
		return exitOK
	}
	printWhoami(c, w)
	return exitOK
}

func printWhoami(c *cli, w *wire.Whoami) {
	cl := w.Caller
	var traits []string
	for _, t := range []struct {
		on   bool
		name string
	}{{cl.Owner, "owner"}, {cl.Admin, "admin"}, {cl.Local, "local"}} {
		if t.on {
			traits = append(traits, t.name)
		}
	}
	fmt.Fprintf(c.stdout, "%s via %s", cl.Name, cl.Via)
	if len(traits) > 0 {
		fmt.Fprintf(c.stdout, " (%s)", strings.Join(traits, ", "))
	}
	fmt.Fprintln(c.stdout)
	// One rule: its lists a line each; several: a line per rule, each
	// checked whole (a call needs one rule allowing its server, cwd,
	// scope and tool together).
	switch len(cl.Rights) {
	case 0:
		fmt.Fprintln(c.stdout, "rights:  none")
	case 1:
		e := cl.Rights[0]
		fmt.Fprintf(c.stdout, "servers: %s\nroots:   %s\nscopes:  %s\ntools:   %s\n", rightsList(e.Servers), rightsList(e.Roots), rightsList(e.Scopes), rightsList(e.Tools))
	default:
		for i, e := range cl.Rights {
			fmt.Fprintf(c.stdout, "rule %d:  servers %s; roots %s; scopes %s; tools %s\n", i+1, rightsList(e.Servers), rightsList(e.Roots), rightsList(e.Scopes), rightsList(e.Tools))
		}
	}
	if l := cl.Rights.Limit(); !l.IsZero() {
		fmt.Fprintf(c.stdout, "rate:    %s (the tightest of its rules; past it calls get 429)\n", l)
	}
	if w.Context.Cwd != "" {
		fmt.Fprintf(c.stdout, "cwd:     %s\n", w.Context.Cwd)
	}
}

// rightsList prints a list of a rule: absent = every one, empty = none.
func rightsList(v []string) string {
	switch {
	case v == nil:
		return "all"
	case len(v) == 0:
		return "none"
	}
	return strings.Join(v, ", ")
}
