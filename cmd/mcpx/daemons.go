package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/wire"
)

// daemonRow is one line of `mcpx daemons`.
type daemonRow struct {
	Pid       int       `json:"pid"`
	Config    string    `json:"config"` // "" = the built-in demo server
	Socket    string    `json:"socket"`
	StateDir  string    `json:"stateDir"`
	Started   time.Time `json:"started"`
	Uptime    string    `json:"uptime,omitempty"` // absent when stale
	Instances *int      `json:"instances,omitempty"`
	Stale     bool      `json:"stale"` // the record's pid is gone: the daemon died without removing it
}

// daemonsCmd is `mcpx daemons`: every daemon's record, the default's and
// those of the daemons chosen by a config (paths.StateDirs).
func daemonsCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "daemons")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	dirs, err := paths.StateDirs(c.getenv)
	if err != nil {
		return report(c, err)
	}
	rows := []daemonRow{}
	for _, d := range dirs {
		rec, err := paths.ReadRecord[wire.DaemonRecord](d)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(c.stderr, "mcpx daemons: %v\n", err)
			}
			continue
		}
		rows = append(rows, daemonRowOf(ctx, rec, d))
	}
	if *asJSON {
		return printJSON(c, rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tUPTIME\tINSTANCES\tCONFIG\tSOCKET")
	for _, r := range rows {
		up, n := r.Uptime, "-"
		if r.Stale {
			up = "stale"
		}
		if r.Instances != nil {
			n = fmt.Sprint(*r.Instances)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.Pid, up, n, cmp.Or(r.Config, "(built-in demo)"), r.Socket)
	}
	tw.Flush()
	return exitOK
}

// daemonRowOf describes the daemon of rec (in state dir d); a live one is
// asked for its instances (briefly: a wedged daemon is listed without them).
func daemonRowOf(ctx context.Context, rec *wire.DaemonRecord, d string) daemonRow {
	r := daemonRow{Pid: rec.Pid, Config: rec.Config, Socket: rec.Socket, StateDir: cmp.Or(rec.State, d), Started: rec.Started}
	if !paths.Alive(rec.Pid) {
		r.Stale = true
		return r
	}
	r.Uptime = time.Since(rec.Started).Round(time.Second).String()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if list, _, err := client.New(rec.Socket, client.Options{StateDir: r.StateDir}).Instances(ctx); err == nil {
		n := len(list.Instances)
		r.Instances = &n
	}
	return r
}
