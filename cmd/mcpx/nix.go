package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"mcpx.dev/mcpx/wire"
)

// nixCmd is `mcpx nix ls|refresh <server>|gc`: the daemon's nix: servers,
// what each resolved to, re-resolving one, and dropping unused entries.
func nixCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "nix")
	brokerAddr := brokerFlag(fs)
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) == 1 && (pos[0] == "ls" || pos[0] == "gc"):
	case len(pos) == 2 && pos[0] == "refresh":
	default:
		return usageError(c, fs, "want `ls`, `refresh <server>` or `gc`")
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	var raw []byte
	switch pos[0] {
	case "ls":
		var doc *wire.NixList
		if doc, raw, err = bc.Nix(ctx); err == nil && !*asJSON {
			printNixList(c, doc)
		}
	case "refresh":
		var doc *wire.NixRefreshed
		if doc, raw, err = bc.NixRefresh(ctx, pos[1]); err == nil && !*asJSON {
			printNixRefreshed(c, doc)
		}
	case "gc":
		var doc *wire.NixGC
		if doc, raw, err = bc.NixGC(ctx); err == nil && !*asJSON {
			fmt.Fprintf(c.stdout, "dropped %d cache entries\n", len(doc.Dropped))
			for _, p := range doc.Dropped {
				fmt.Fprintf(c.stdout, "  %s  %s\n", p.Spec, p.StorePath)
			}
		}
	}
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
	}
	return exitOK
}

func printNixList(c *cli, doc *wire.NixList) {
	var programs, envs []wire.NixServer
	for _, s := range doc.Servers {
		if s.Spec != "" {
			programs = append(programs, s)
		}
		if s.Environment != "" {
			envs = append(envs, s)
		}
	}
	if len(programs) == 0 {
		fmt.Fprintln(c.stdout, "no server's command is a nix: spec")
	} else {
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tSPEC\tPINNED\tREV\tSTORE PATH")
		for _, s := range programs {
			rev, store := "-", "(not resolved yet)"
			if p := s.Program; p != nil {
				rev, store = nixRev(*p), p.StorePath
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Server, s.Spec, yesNo(s.Pinned), rev, store)
		}
		tw.Flush()
	}
	if len(envs) > 0 {
		fmt.Fprintln(c.stdout)
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tENVIRONMENT\tREV\tVARIABLES\tCAPTURED")
		for _, s := range envs {
			rev, vars, at := "-", "-", "(not captured yet)"
			if e := s.Env; e != nil {
				rev, vars, at = envRev(*e), fmt.Sprint(e.Variables), e.CapturedAt.Local().Format("2006-01-02 15:04:05")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Server, s.Environment, rev, vars, at)
		}
		tw.Flush()
	}
	if len(doc.Unreferenced)+len(doc.UnreferencedEnvironments) > 0 {
		fmt.Fprintf(c.stdout, "unreferenced (`mcpx nix gc` drops them):\n")
		for _, p := range doc.Unreferenced {
			fmt.Fprintf(c.stdout, "  %s  %s  %s\n", p.Spec, nixRev(p), p.StorePath)
		}
		for _, e := range doc.UnreferencedEnvironments {
			fmt.Fprintf(c.stdout, "  %s  %s  (environment, %d variables)\n", e.Environment, envRev(e), e.Variables)
		}
	}
}

// envRev is an environment's locked revision, short, its narHash, or the
// hash of its shell.nix.
func envRev(e wire.NixEnvironment) string {
	if e.FileHash != "" {
		return "sha256:" + e.FileHash[:min(12, len(e.FileHash))]
	}
	return nixRev(wire.NixProgram{Rev: e.Rev, NarHash: e.NarHash})
}

func printNixRefreshed(c *cli, doc *wire.NixRefreshed) {
	switch {
	case doc.Current.StorePath == "":
		// No nix: command: only the environment was refreshed.
	case !doc.Changed:
		fmt.Fprintf(c.stdout, "%s: unchanged (%s, %s)\n", doc.Server, nixRev(doc.Current), doc.Current.StorePath)
	default:
		from := "(not resolved before)"
		if doc.Previous != nil {
			from = nixRev(*doc.Previous) + " " + doc.Previous.StorePath
		}
		fmt.Fprintf(c.stdout, "%s: %s\n  -> %s %s\n", doc.Server, from, nixRev(doc.Current), doc.Current.StorePath)
	}
	if doc.Environment != "" {
		state := "unchanged"
		if doc.EnvironmentChanged {
			state = "changed"
		}
		fmt.Fprintf(c.stdout, "%s: environment %s %s\n", doc.Server, doc.Environment, state)
	}
	if len(doc.Replaced) > 0 {
		fmt.Fprintf(c.stdout, "replacing the instances of %s\n", strings.Join(doc.Replaced, ", "))
	}
}

// nixRev is the locked revision, short, or the narHash for a path: ref.
func nixRev(p wire.NixProgram) string {
	switch {
	case len(p.Rev) >= 12:
		return p.Rev[:12]
	case p.Rev != "":
		return p.Rev
	case p.NarHash != "":
		return p.NarHash
	}
	return "-"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
