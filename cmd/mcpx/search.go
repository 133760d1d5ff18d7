package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
)

// stringsFlag is a flag that may be given many times.
type stringsFlag []string

func (f *stringsFlag) String() string     { return strings.Join(*f, ",") }
func (f *stringsFlag) Set(s string) error { *f = append(*f, s); return nil }

// searchCmd is `mcpx search <terms> [--tag t] [--explain] [--json]`: the
// broker's search of every server's tools (GET /v1/tools?q=), best first.
// --explain prints each term's contribution under each hit. Nothing found
// is exit code 1; failing servers are reported on stderr and make it 4.
func searchCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "search")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	var tags stringsFlag
	fs.Var(&tags, "tag", "keep only tools with this tag (exact; may be repeated)")
	explain := fs.Bool("explain", false, "print what each term contributed to each hit")
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	co := callerFlags(fs, "search as a caller in this directory")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 && len(tags) == 0 {
		return usageError(c, fs, "want search terms or --tag")
	}
	bc, caller, err := callerClient(ctx, c, brokerAddr, *noAutostart, co)
	if err != nil {
		return report(c, err)
	}
	list, raw, err := bc.SearchTools(ctx, caller, pos, tags)
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
	} else if len(list.Tools) == 0 {
		what := quoteAll(pos)
		for _, t := range tags {
			what = append(what, "--tag "+t)
		}
		fmt.Fprintf(c.stderr, "mcpx: no tool matches %s (exit 1); `mcpx tools` lists them all\n", strings.Join(what, " "))
	} else {
		if list.Match == "any" || list.Match == "typo" {
			fmt.Fprintf(c.stderr, "mcpx: no tool matches every term; showing %s matches\n", list.Match)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SCORE\tSERVER\tTOOL\tDESCRIPTION")
		for i, t := range list.Tools {
			var r toolRow
			if json.Unmarshal(t, &r) != nil || i >= len(list.Hits) {
				continue
			}
			desc, _, _ := strings.Cut(strings.TrimSpace(r.Description), "\n")
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", list.Hits[i].Score, r.Server, r.Name, desc)
			if !*explain {
				continue
			}
			for _, ts := range list.Hits[i].Terms {
				var parts []string
				for _, p := range ts.Parts {
					parts = append(parts, fmt.Sprintf("%s %s +%d", p.Field, p.Why, p.Points))
				}
				if len(parts) == 0 {
					parts = []string{"no match"}
				}
				fmt.Fprintf(tw, "\t\t  %q %d\t%s\n", ts.Term, ts.Points, strings.Join(parts, ", "))
			}
		}
		tw.Flush()
	}
	for _, p := range list.Errors {
		fmt.Fprintf(c.stderr, "mcpx: %s\n", problemText(p))
	}
	switch {
	case len(list.Errors) > 0:
		return exitFailed
	case len(list.Tools) == 0:
		return exitToolError
	}
	return exitOK
}

func quoteAll(ss []string) []string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return q
}
