package main

import (
	"context"
	"fmt"
	"strings"

	"mcpx.dev/mcpx/pool/proc/sandbox"
	"mcpx.dev/mcpx/wire"
)

// sandboxCmd is `mcpx sandbox show <server> [--cwd DIR] [--json]`: what
// would confine the child that serves this caller there
// (docs/sandbox.md).
func sandboxCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "sandbox")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	co := callerFlags(fs, "show the policy of the child that serves a caller in this directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 2 || pos[0] != "show" {
		return usageError(c, fs, "want `show <server>`")
	}
	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	s, raw, err := bc.Sandbox(ctx, caller, pos[1])
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
		return exitOK
	}
	printSandbox(c, s)
	return exitOK
}

func printSandbox(c *cli, s *wire.Sandbox) {
	w := c.stdout
	fmt.Fprintf(w, "server:   %s\nkey:      %s\n", s.Server, s.Key)
	if s.Root != "" {
		fmt.Fprintf(w, "root:     %s\n", s.Root)
	}
	if !s.Confined {
		fmt.Fprintln(w, "sandbox:  none: the child runs with the daemon's authority (set \"sandbox\": true to confine it)")
		return
	}
	fmt.Fprintf(w, "sandbox:  %s (%s), mode %s, fingerprint %s\n", "confined", whyText(s.Why), s.Mode, s.Fingerprint)
	list := func(name string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(w, "%s\n", name)
		for _, it := range items {
			fmt.Fprintf(w, "  %s\n", it)
		}
	}
	list("read:", s.Read)
	list("write:", s.Write)
	fmt.Fprintf(w, "network:  %s", s.Network)
	switch {
	case len(s.Allow) > 0:
		fmt.Fprintf(w, " (through the egress proxy: %s)", strings.Join(s.Allow, ", "))
	case len(s.Ports) > 0:
		fmt.Fprintf(w, " (TCP ports %s)", strings.Trim(fmt.Sprint(s.Ports), "[]"))
	}
	fmt.Fprintln(w)
	if len(s.Env) > 0 {
		fmt.Fprintf(w, "env:      %s\n", strings.Join(s.Env, " "))
	}
	if l := s.Limits; l != nil {
		fmt.Fprintf(w, "limits:   memory %s, processes %s, open files %s, cpu %s\n",
			limitText(l.Memory > 0, sandbox.FormatBytes(l.Memory)), limitText(l.Processes > 0, fmt.Sprint(l.Processes)),
			limitText(l.OpenFiles > 0, fmt.Sprint(l.OpenFiles)), limitText(l.CPU != "", l.CPU))
	}
	if len(s.Enforcement) > 0 {
		fmt.Fprintln(w, "enforced on this kernel:")
		for _, f := range s.Enforcement {
			fmt.Fprintf(w, "  %s\n", sandbox.Feature(f)) // the wire form is sandbox's, printed as doctor prints it
		}
	}
	if s.Refused != "" {
		fmt.Fprintf(w, "REFUSED: %s\n", s.Refused)
	}
}

func whyText(why string) string {
	switch why {
	case "caller":
		return "the caller is not the daemon's owner"
	case "defaults":
		return "the config's defaults"
	}
	return "the server's config"
}

func limitText(set bool, v string) string {
	if !set {
		return "none"
	}
	return v
}
