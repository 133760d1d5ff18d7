package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/observe/calllog"
	"mcpx.dev/mcpx/wire"
)

// statsCmd is `mcpx stats [--since 1h] [--by server|tool|caller] [--json]`:
// the daemon's call log as counts, failures and duration percentiles.
func statsCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "stats")
	brokerAddr := brokerFlag(fs)
	noAutostart := autostartFlag(fs)
	since := fs.String("since", "", `count the calls of this long back ("1h", "30m") or since an RFC 3339 time; default: every call on disk`)
	by := fs.String("by", "", "a row per server, tool or caller; default: the total only")
	asJSON := fs.Bool("json", false, "print the broker's JSON answer")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	if _, err := calllog.ParseBy(*by); err != nil {
		return usageError(c, fs, "--by: %v", err)
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	if err := autostart(ctx, c, bc, *noAutostart); err != nil {
		return report(c, err)
	}
	doc, raw, err := bc.CallStats(ctx, *since, *by)
	if err != nil {
		return report(c, err)
	}
	if *asJSON {
		fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
		return exitOK
	}
	printCallStats(c, doc)
	return exitOK
}

func printCallStats(c *cli, doc *wire.CallStats) {
	if !doc.Since.IsZero() {
		fmt.Fprintf(c.stdout, "calls since %s\n", doc.Since.Local().Format(time.DateTime))
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := strings.ToUpper(doc.By)
	if head == "" {
		head = " "
	}
	fmt.Fprintf(tw, "%s\tCALLS\tFAILED\tISERROR\tERRORS\tRATE\tP50\tP95\tP99\t\n", head)
	row := func(key string, r wire.CallStatsRow) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1f%%\t%s\t%s\t%s\t\n", key, r.Count, r.Failures, r.IsError, r.Errors,
			100*r.FailureRate, msString(r.P50Ms), msString(r.P95Ms), msString(r.P99Ms))
	}
	for _, r := range doc.Rows {
		row(r.Key, r)
	}
	row("total", doc.Total)
	tw.Flush()
	if doc.Skipped > 0 {
		fmt.Fprintf(c.stdout, "%d damaged lines of the call log skipped\n", doc.Skipped)
	}
	printRecords(c, doc.Records)
}

// msString prints a duration given in milliseconds as Go does, rounded to
// keep three significant figures or so.
func msString(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// printRecords prints the call log's writer line of status and stats.
func printRecords(c *cli, r *wire.RecordsStatus) {
	switch {
	case r == nil:
	case !r.Enabled:
		fmt.Fprintln(c.stdout, "records: off (records.enabled in the config)")
	default:
		fmt.Fprintf(c.stdout, "records: %d written, %d dropped (writer behind), %d lost (directory or disk)\n", r.Written, r.Dropped, r.Failed)
		if r.LastError != "" {
			fmt.Fprintf(c.stdout, "records: not being written: %s\n", r.LastError)
		}
	}
}
