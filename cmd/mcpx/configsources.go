package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"mcpx.dev/mcpx/wire"
)

// sourcesOpts are the flags of `mcpx config --sources`.
type sourcesOpts struct {
	on          *bool
	asJSON      *bool
	brokerAddr  *brokerOpts
	noAutostart *bool
	caller      *callerOpts
}

func sourcesFlags(fs *flag.FlagSet) sourcesOpts {
	return sourcesOpts{
		on:          fs.Bool("sources", false, "ask the daemon for the config chain of this directory: each directory, whether its config applies (and why not), and which file defines each server"),
		asJSON:      fs.Bool("json", false, "with --sources: print the broker's JSON answer; with check: the verdict as one JSON object (ok, source, servers, disabled, problems, warnings)"),
		brokerAddr:  brokerFlag(fs),
		noAutostart: autostartFlag(fs),
		caller:      callerFlags(fs, "with --sources: the chain of this directory"),
	}
}

// configSources is `mcpx config --sources [--json]` (GET /v1/config/sources).
func configSources(ctx context.Context, c *cli, o sourcesOpts) int {
	bc, caller, err := callerClient(ctx, c, o.brokerAddr, *o.noAutostart, o.caller)
	if err != nil {
		return report(c, err)
	}
	src, raw, err := bc.ConfigSources(ctx, caller)
	if err != nil {
		return report(c, err)
	}
	if *o.asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
		return exitOK
	}
	printSources(c, src)
	return exitOK
}

func printSources(c *cli, src *wire.ConfigSources) {
	if src.ProjectConfig {
		fmt.Fprintf(c.stdout, "chain of %s (project files apply):\n", orDash(src.Cwd))
	} else {
		fmt.Fprintf(c.stdout, "chain of %s (project files do not apply to this caller):\n", orDash(src.Cwd))
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tCONFIG\tSTATE")
	for _, d := range src.Chain {
		state := "applied"
		switch {
		case d.Config == "" && d.Kind != "user":
			state = "no config.json"
		case d.Skipped != "":
			state = "skipped: " + d.Skipped
		case !d.Applied:
			state = "not applied"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Kind, orDash(cmp.Or(d.Config, d.Path)), state)
	}
	tw.Flush()
	fmt.Fprintln(c.stdout)
	tw = tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tDEFINED BY\tNOTE")
	for _, s := range src.Servers {
		var note []string
		if s.DisabledBy != "" {
			note = append(note, "disabled by "+s.DisabledBy)
		}
		if len(s.Overrides) > 0 {
			note = append(note, "overrides "+strings.Join(s.Overrides, ", "))
		}
		if s.Instance != s.Name {
			note = append(note, "instances as "+s.Instance)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, orDash(cmp.Or(s.File, "("+s.Kind+")")), orDash(strings.Join(note, "; ")))
	}
	tw.Flush()
	for _, w := range src.Warnings {
		fmt.Fprintf(c.stderr, "warning: %s\n", w)
	}
}
